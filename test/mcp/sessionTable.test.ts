import { describe, expect, it } from "vitest"
import { type McpSession, SessionTable } from "../../src/mcp/McpSessions.ts"

/** The gate's record of MCP sessions (src/mcp/McpSessions.ts): the cap's order and the sweep. */

const session = (id: string, orgUuid: string, lastUsed: number): McpSession => ({
  id,
  orgUuid,
  protocolVersion: "2025-11-25",
  lastUsed
})

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

  it("keeps at most max sessions in all, ending the least recently used of any organization", () => {
    const table = new SessionTable(10, 1000, 3)
    table.add(session("a", "org1", 0))
    table.add(session("b", "org2", 1))
    table.add(session("c", "org3", 2))
    table.touch(table.get("a")!, 3)
    expect(table.add(session("d", "org4", 4)).map((s) => s.id)).toEqual(["b"])
    expect(table.add(session("e", "org4", 5)).map((s) => s.id)).toEqual(["c"])
    expect(table.add(session("f", "org1", 6)).map((s) => s.id)).toEqual(["a"])
    expect(["a", "b", "c", "d", "e", "f"].filter((id) => table.get(id) !== undefined)).toEqual(["d", "e", "f"])
    // Both caps at once: the organization's own oldest goes first, and the process is then within its cap.
    const both = new SessionTable(1, 1000, 2)
    both.add(session("p", "org1", 0))
    both.add(session("q", "org2", 1))
    expect(both.add(session("r", "org1", 2)).map((s) => s.id)).toEqual(["p"])
    expect(both.add(session("s", "org3", 3)).map((s) => s.id)).toEqual(["q"])
    expect(both.size).toBe(2)
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
