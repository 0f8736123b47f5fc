import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { DEFAULT_PAGE_SIZE, pageOf, pageRequest, truncate } from "../../src/mcp/ToolKit.ts"

/** Paging and truncation rules every MCP list and text tool follows. */
describe("MCP tool paging and truncation", () => {
  const items = Array.from({ length: 45 }, (_, i) => i)

  it("pages with an opaque cursor until the last page, which has no nextCursor", () => {
    const seen: Array<number> = []
    let cursor: string | undefined
    for (let guard = 0; guard < 10; guard++) {
      const page = pageOf(items, Effect.runSync(pageRequest(cursor, undefined)))
      seen.push(...page.items)
      expect(page.total).toBe(45)
      if (page.nextCursor === null) break
      cursor = page.nextCursor
    }
    expect(seen).toEqual(items)
  })

  it("takes the page size asked for (its range is refused earlier, as the arguments are decoded) and refuses a cursor it did not issue", () => {
    expect(Effect.runSync(pageRequest(undefined, 7)).size).toBe(7)
    expect(Effect.runSync(pageRequest(undefined, undefined)).size).toBe(DEFAULT_PAGE_SIZE)
    const exit = Effect.runSyncExit(pageRequest("not-a-cursor", 5))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(JSON.stringify(exit)).toContain("invalid_argument")
  })

  it("cuts long texts with a marker that says how much is left and how to read it", () => {
    const cut = truncate("x".repeat(5000), 1000, "raise max_chars")
    expect(cut.truncated).toBe(true)
    expect(cut.text).toMatch(/\[truncated: 4000 more characters; raise max_chars\]$/)
    expect(truncate("short", 1000, "n/a")).toEqual({ text: "short", truncated: false })
  })
})
