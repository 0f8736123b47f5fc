import { describe, expect, it } from "vitest"
import { type McpSession, SessionTable } from "../../src/mcp/McpSessions.ts"

/** The gate's record of MCP sessions (src/mcp/McpSessions.ts): the cap's order and the sweep. */

const session = (id: string, orgUuid: string, lastUsed: number): McpSession => ({ id, orgUuid, protocolVersion: "2025-11-25", lastUsed })

describe("SessionTable", () => {
  it("keeps at most perOrg sessions an organization, ending the least recently used", () => {
    const table = new SessionTable(2, 1000)
    expect(table.add(session("a", "org1", 0))).toEqual([])
    expect(table.add(session("b", "org1", 1))).toEqual([])
    expect(table.add(session("x", "org2", 2))).toEqual([])
    table.touch(table.get("a")!, 3)
    expect(table.add(session("c", "org1", 4)).map((s) => s.id)).toEqual(["b"])
    expect(table.get("b")).toBeUndefined()
    expect([table.get("a")?.id, table.get("c")?.id, table.get("x")?.id]).toEqual(["a", "c", "x"])
    expect(table.size).toBe(3)
  })

  it("sweeps the sessions idle for longer than idleMs, of every organization, and only those", () => {
    const table = new SessionTable(10, 1000)
    table.add(session("old1", "org1", 0))
    table.add(session("new1", "org1", 900))
    table.add(session("old2", "org2", 100))
    table.add(session("used2", "org2", 50))
    table.touch(table.get("used2")!, 1500)
    expect(table.sweep(1200).map((s) => s.id).sort()).toEqual(["old1", "old2"])
    expect(table.size).toBe(2)
    expect(table.sweep(1200)).toEqual([])
    expect(table.sweep(2600).map((s) => s.id).sort()).toEqual(["new1", "used2"])
    expect(table.size).toBe(0)
  })

  it("removes a session once; a session named like a removed one is a new entry", () => {
    const table = new SessionTable(1, 1000)
    const first = session("a", "org1", 0)
    table.add(first)
    table.remove(first)
    table.remove(first)
    expect(table.size).toBe(0)
    expect(table.add(session("a", "org1", 5))).toEqual([])
    table.remove(first) // the old object no longer names the entry
    expect(table.get("a")?.lastUsed).toBe(5)
  })
})
