import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { promptCatalog, renderDocs, toolCatalog } from "../../src/mcp/McpCatalog.ts"
import { runVdb } from "../support/processes.ts"

/** docs/mcp.md is generated from the definitions; `UPDATE_DOCS=1` rewrites it. */
const DOCS = fileURLToPath(new URL("../../docs/mcp.md", import.meta.url))

describe("docs/mcp.md", () => {
  it("matches the tool and prompt definitions", () => {
    const generated = renderDocs()
    if (process.env.UPDATE_DOCS === "1") writeFileSync(DOCS, generated)
    expect(readFileSync(DOCS, "utf8"), "docs/mcp.md is stale: run UPDATE_DOCS=1 npx vitest run test/mcp/docs.test.ts")
      .toBe(generated)
  })

  it("every tool and prompt has a description, every argument a type and a description", () => {
    const entries = [...toolCatalog(), ...promptCatalog()]
    expect(toolCatalog()).toHaveLength(31)
    expect(promptCatalog()).toHaveLength(18)
    expect(new Set(entries.map((e) => e.name)).size).toBe(entries.length)
    for (const e of entries) {
      expect(e.description, e.name).not.toBe("")
      for (const a of e.arguments) expect(a.description, `${e.name}.${a.name}`).not.toBe("")
    }
  })

  it("bin/vdb mcp tools and mcp prompts list the same", async () => {
    const tools = await runVdb(["mcp", "tools", "--json"], {})
    expect(tools.code).toBe(0)
    expect((JSON.parse(tools.stdout) as Array<{ name: string }>).map((t) => t.name)).toEqual(
      toolCatalog().map((t) => t.name)
    )
    const prompts = await runVdb(["mcp", "prompts"], {})
    expect(prompts.code).toBe(0)
    for (const p of promptCatalog()) expect(prompts.stdout).toContain(`${p.name}(`)
  })
})
