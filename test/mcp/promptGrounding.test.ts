import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { PROMPT_DEFINITIONS } from "../../src/mcp/PromptDefinitions.ts"
import { TOOL_DEFINITIONS } from "../../src/mcp/ToolDefinitions.ts"

/**
 * A prompt calls its tools in process, past the argument decoding a client's call goes through;
 * the tools no longer clamp (issue 33), so every argument a prompt passes must be one the tool's
 * own schema accepts (a `limit: 200` would otherwise ask for more than a page holds).
 */
describe("MCP prompt grounding", () => {
  it("every prompt's tool calls pass arguments the tool's parameter schema accepts", () => {
    const sample: Record<string, string> = {
      identifier: "CVE-2021-44228",
      identifiers: "CVE-2021-44228,CVE-2017-0144",
      text: "hello",
      since: "2024-01-01",
      product: "p",
      version: "1"
    }
    for (const prompt of PROMPT_DEFINITIONS) {
      for (const [tool, params] of prompt.grounding(sample)) {
        const definition = TOOL_DEFINITIONS.find((d) => d.name === tool)
        expect(definition, `${prompt.name} → ${tool}`).toBeDefined()
        // `since` is optional: a prompt passes undefined for an absent one, which the call drops as JSON would.
        const args = JSON.parse(JSON.stringify(params)) as unknown
        const decoded = Schema.decodeUnknownExit(definition!.parameters as Schema.Codec<unknown>)(args)
        expect(decoded._tag, `${prompt.name} → ${tool} ${JSON.stringify(args)}`).toBe("Success")
      }
    }
  })
})
