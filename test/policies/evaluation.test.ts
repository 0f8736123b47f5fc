import { describe, expect, it } from "vitest"
import { PolicyRefusal } from "../../schema/PolicyRefusal.ts"
import { clientName } from "../../src/policies/ClientIdentity.ts"
import { historyOf } from "../../src/policies/DeclaredCapabilities.ts"
import {
  capabilityCheck,
  clientRefusal,
  modelRefusal,
  providerRefusal,
  visibleModels
} from "../../src/policies/PolicyEvaluation.ts"
import { compileSnapshot, type PolicyEntryView } from "../../src/policies/PolicySnapshot.ts"

const snapshotOf = (...entries: Array<Partial<PolicyEntryView> & Pick<PolicyEntryView, "kind" | "effect" | "value">>) =>
  compileSnapshot(1, entries.map((e) => ({ provider: "", ...e })))

const codeOf = (result: unknown) => result instanceof PolicyRefusal ? result.refusal : "pass"

describe("provider and model policy", () => {
  it("deny wins; the platform-wide switch applies to inference only", () => {
    const snapshot = snapshotOf({ kind: "provider", effect: "deny", value: "OpenAI" })
    expect(codeOf(providerRefusal(snapshot, "openai", new Set(), false))).toBe("provider_denied")
    expect(codeOf(providerRefusal(snapshot, "openai", new Set(), true))).toBe("provider_denied")
    expect(codeOf(providerRefusal(snapshot, "groq", new Set(["groq"]), false))).toBe("provider_disabled")
    expect(codeOf(providerRefusal(snapshot, "groq", new Set(["groq"]), true))).toBe("pass")
  })

  it("models: deny, then allowlist mode per provider from the first allow entry", () => {
    const none = snapshotOf()
    expect(codeOf(modelRefusal(none.forProvider("openai"), "openai", "anything"))).toBe("pass")
    const denied = snapshotOf({ kind: "model", effect: "deny", provider: "openai", value: "gpt-4o" })
    expect(codeOf(modelRefusal(denied.forProvider("openai"), "openai", "gpt-4o"))).toBe("model_denied")
    expect(codeOf(modelRefusal(denied.forProvider("openai"), "openai", "gpt-4.1"))).toBe("pass")
    const allowlist = snapshotOf(
      { kind: "model", effect: "deny", provider: "openai", value: "gpt-4o" },
      { kind: "model", effect: "allow", provider: "openai", value: "gpt-4.1" }
    )
    const openai = allowlist.forProvider("openai")
    expect(codeOf(modelRefusal(openai, "openai", "gpt-4.1"))).toBe("pass")
    expect(codeOf(modelRefusal(openai, "openai", "gpt-4o"))).toBe("model_denied")
    expect(codeOf(modelRefusal(openai, "openai", "o3"))).toBe("model_not_allowed")
    expect(codeOf(modelRefusal(allowlist.forProvider("groq"), "groq", "o3"))).toBe("pass")
    expect(visibleModels(openai, ["gpt-4.1", "gpt-4o", "o3"])).toEqual(["gpt-4.1"])
  })

  it("clients: an unidentifiable client is `unknown` and fails an allowlist that does not list it", () => {
    const allowlist = snapshotOf({ kind: "client", effect: "allow", value: "Claude-Code" }).forProvider("anthropic")
    expect(codeOf(clientRefusal(allowlist, "claude-code"))).toBe("pass")
    expect(codeOf(clientRefusal(allowlist, "unknown"))).toBe("client_denied")
    const withUnknown = snapshotOf({ kind: "client", effect: "allow", value: "unknown" }).forProvider("x")
    expect(codeOf(clientRefusal(withUnknown, "unknown"))).toBe("pass")
  })
})

describe("client identity", () => {
  it.each([
    [{ "user-agent": "claude-cli/2.0.14 (external, cli)" }, "claude-code"],
    [{ "user-agent": "Anthropic/JS 0.60.0", "x-app": "cli" }, "anthropic-node"],
    [{ "x-app": "cli" }, "claude-code"],
    [{ "user-agent": "codex_cli_rs/0.46.0 (Mac OS 15.0; arm64)" }, "codex"],
    [{ originator: "codex_cli_rs" }, "codex"],
    [{ "user-agent": "Mozilla/5.0 Cursor/1.7.0 Chrome" }, "cursor"],
    [{ "user-agent": "aws-sdk-js/3.0 KiroIDE-0.2.13" }, "kiro"],
    [{ "user-agent": "OpenAI/Python 1.99.0" }, "openai-python"],
    [{ "user-agent": "OpenAI/JS 5.10.0" }, "openai-node"],
    [{ "user-agent": "Anthropic/Python 0.64.0" }, "anthropic-python"],
    [{ "x-stainless-lang": "python", "anthropic-version": "2023-06-01" }, "anthropic-python"],
    [{ "x-stainless-lang": "js" }, "openai-node"],
    [{ "user-agent": "curl/8.5.0" }, "curl"],
    [{ "user-agent": "my-own-tool/1.0" }, "unknown"],
    [{}, "unknown"]
  ])("%o is %s", (headers, name) => {
    expect(clientName(headers)).toBe(name)
  })
})

describe("tools, MCP servers and skills", () => {
  const chatTools = [
    { type: "function", function: { name: "shell" } },
    { type: "function", function: { name: "search" } }
  ]

  it("strip removes the tool and keeps the rest of the body shared", () => {
    const policy = snapshotOf({ kind: "tool", effect: "strip", value: "shell" }).forProvider("openai")
    const messages = [{ role: "user", content: "hi" }]
    const result = capabilityCheck(policy, "chat", { model: "m", messages, tools: chatTools, tool_choice: "auto" })
    if (result instanceof PolicyRefusal) throw result
    expect(result.stripped).toEqual([{ kind: "tool", name: "shell" }])
    expect(result.body!.tools).toEqual([chatTools[1]])
    expect(result.body!.tool_choice).toBe("auto")
    expect(result.body!.messages).toBe(messages)
  })

  it("strip of the only tool removes tools and tool_choice", () => {
    const policy = snapshotOf({ kind: "tool", effect: "strip", value: "shell" }).forProvider("openai")
    const result = capabilityCheck(policy, "chat", { model: "m", tools: [chatTools[0]], tool_choice: "required" })
    if (result instanceof PolicyRefusal) throw result
    expect(result.body).toEqual({ model: "m" })
  })

  it("a choice naming a stripped tool goes, in each of its forms; allowed_tools loses only the stripped entries", () => {
    const policy = snapshotOf({ kind: "tool", effect: "strip", value: "shell" }, {
      kind: "mcp",
      effect: "strip",
      value: "tracker"
    })
      .forProvider("openai")
    const strip = (surface: "chat" | "responses", body: Record<string, unknown>) => {
      const result = capabilityCheck(policy, surface, { model: "m", ...body })
      if (result instanceof PolicyRefusal) throw result
      return result
    }
    // Chat: a custom tool's choice, and the legacy function_call.
    const custom = [{ type: "custom", custom: { name: "shell" } }, { type: "custom", custom: { name: "search" } }]
    const chosen = strip("chat", { tools: custom, tool_choice: { type: "custom", custom: { name: "shell" } } })
    expect(chosen.body).toEqual({ model: "m", tools: [custom[1]] })
    expect(chosen.removals).toEqual([{ path: ["tools", 0], remove: true }, { path: ["tool_choice"], remove: true }])
    const functions = [{ name: "shell" }, { name: "search" }]
    expect(strip("chat", { functions, function_call: { name: "shell" } }).body).toEqual({
      model: "m",
      functions: [functions[1]]
    })
    expect(strip("chat", { functions, function_call: { name: "search" } }).body).toEqual({
      model: "m",
      functions: [functions[1]],
      function_call: { name: "search" }
    })
    // Chat allowed_tools: the stripped entry goes; the restriction stays.
    const allowed = {
      type: "allowed_tools",
      allowed_tools: {
        mode: "auto",
        tools: [{ type: "function", function: { name: "shell" } }, { type: "function", function: { name: "search" } }]
      }
    }
    const narrowed = strip("chat", { tools: chatTools, tool_choice: allowed })
    expect(narrowed.body!.tool_choice).toEqual({
      type: "allowed_tools",
      allowed_tools: { mode: "auto", tools: [{ type: "function", function: { name: "search" } }] }
    })
    expect(narrowed.removals).toContainEqual({ path: ["tool_choice", "allowed_tools", "tools", 0], remove: true })
    // Responses: allowed_tools naming only stripped tools goes whole; an MCP choice of a stripped server goes.
    const responsesTools = [{ type: "function", name: "shell" }, { type: "function", name: "search" }, {
      type: "mcp",
      server_label: "tracker",
      server_url: "https://t.example/mcp"
    }]
    const onlyStripped = strip("responses", {
      tools: responsesTools,
      tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "shell" }] }
    })
    expect(onlyStripped.body).toEqual({ model: "m", tools: [responsesTools[1]] })
    const mcpChoice = strip("responses", {
      tools: responsesTools,
      tool_choice: { type: "mcp", server_label: "tracker", name: "get" }
    })
    expect(mcpChoice.body).toEqual({ model: "m", tools: [responsesTools[1]] })
  })

  it("Kiro: tools declared on the current message are judged, stripped from there, and its history's toolUses count as used", () => {
    const tool = (name: string) => ({ toolSpecification: { name, inputSchema: { json: {} } } })
    const kiro = (names: Array<string>, used: Array<string> = []) => ({
      conversationState: {
        currentMessage: { userInputMessage: { content: "hi", userInputMessageContext: { tools: names.map(tool) } } },
        history: [{
          assistantResponseMessage: { content: "", toolUses: used.map((name) => ({ name, toolUseId: "t", input: {} })) }
        }]
      }
    })
    const deny = snapshotOf({ kind: "tool", effect: "deny", value: "shell" }).forProvider("kiro")
    expect(codeOf(capabilityCheck(deny, "kiro", kiro(["search", "shell"])))).toBe("tool_denied")
    expect(codeOf(capabilityCheck(deny, "kiro", kiro(["search"])))).toBe("pass")
    const strip = snapshotOf({ kind: "tool", effect: "strip", value: "shell" }).forProvider("kiro")
    const some = capabilityCheck(strip, "kiro", kiro(["search", "shell"]))
    if (some instanceof PolicyRefusal) throw some
    expect(some.body).toEqual(kiro(["search"]))
    expect(some.removals).toEqual([{
      path: ["conversationState", "currentMessage", "userInputMessage", "userInputMessageContext", "tools", 1],
      remove: true
    }])
    const all = capabilityCheck(strip, "kiro", kiro(["shell"]))
    if (all instanceof PolicyRefusal) throw all
    expect((all.body as any).conversationState.currentMessage.userInputMessage.userInputMessageContext).toEqual({})
    expect(codeOf(capabilityCheck(strip, "kiro", kiro(["shell"], ["shell"])))).toBe("tool_denied")
  })

  it("a chat tool is named by its type: a custom tool carrying a function decoy is judged by its own name", () => {
    const decoy = { type: "custom", custom: { name: "shell" }, function: { name: "search" } }
    const denied = snapshotOf({ kind: "tool", effect: "deny", value: "shell" }).forProvider("openai")
    expect(codeOf(capabilityCheck(denied, "chat", { model: "m", tools: [decoy] }))).toBe("tool_denied")
    const stripped = capabilityCheck(
      snapshotOf({ kind: "tool", effect: "strip", value: "shell" }).forProvider("openai"),
      "chat",
      {
        model: "m",
        tools: [decoy, chatTools[1]]
      }
    )
    if (stripped instanceof PolicyRefusal) throw stripped
    expect(stripped.body!.tools).toEqual([chatTools[1]])
  })

  it("strip escalates to tool_denied when the tool was used earlier, on each surface", () => {
    const policy = snapshotOf({ kind: "tool", effect: "strip", value: "shell" }).forProvider("x")
    const chat = capabilityCheck(policy, "chat", {
      tools: chatTools,
      messages: [{
        role: "assistant",
        tool_calls: [{ type: "function", function: { name: "shell", arguments: "{}" } }]
      }]
    })
    expect(codeOf(chat)).toBe("tool_denied")
    expect((chat as PolicyRefusal).detail).toContain("shell")
    const responses = capabilityCheck(policy, "responses", {
      tools: [{ type: "function", name: "shell" }],
      input: [{ type: "function_call", name: "shell", arguments: "{}", call_id: "c" }]
    })
    expect(codeOf(responses)).toBe("tool_denied")
    const messages = capabilityCheck(policy, "messages", {
      tools: [{ name: "shell", input_schema: {} }],
      messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "shell", input: {} }] }]
    })
    expect(codeOf(messages)).toBe("tool_denied")
    // A tool used earlier but not declared now is not a strip: nothing to escalate.
    expect(codeOf(capabilityCheck(policy, "chat", { tools: [chatTools[1]], messages: [] }))).toBe("pass")
  })

  it("records which tools a conversation already called", () => {
    expect([...historyOf("chat", { messages: [{ role: "assistant", function_call: { name: "legacy" } }] }).tools])
      .toEqual(["legacy"])
  })

  it("tool allowlist mode from the first allow entry; deny wins", () => {
    const policy = snapshotOf(
      { kind: "tool", effect: "allow", value: "search" },
      { kind: "tool", effect: "allow", value: "shell" },
      { kind: "tool", effect: "deny", value: "shell" }
    ).forProvider("openai")
    expect(codeOf(capabilityCheck(policy, "chat", { tools: [chatTools[1]] }))).toBe("pass")
    expect(codeOf(capabilityCheck(policy, "chat", { tools: chatTools }))).toBe("tool_denied")
    expect(codeOf(capabilityCheck(policy, "chat", { functions: [{ name: "other" }] }))).toBe("tool_denied")
  })

  it("MCP servers match by name or URL; skills by id or name; provider-scoped entries stay scoped", () => {
    const snapshot = snapshotOf(
      { kind: "mcp", effect: "deny", value: "https://x.example/mcp", provider: "anthropic" },
      { kind: "skill", effect: "allow", value: "pdf" }
    )
    const anthropic = snapshot.forProvider("anthropic")
    expect(
      codeOf(capabilityCheck(anthropic, "messages", { mcp_servers: [{ name: "x", url: "https://x.example/mcp" }] }))
    )
      .toBe("mcp_denied")
    expect(
      codeOf(
        capabilityCheck(anthropic, "messages", {
          tools: [{ type: "mcp_toolset", mcp_server_name: "y" }],
          mcp_servers: []
        })
      )
    )
      .toBe("pass")
    expect(codeOf(capabilityCheck(snapshot.forProvider("openai"), "responses", {
      tools: [{ type: "mcp", server_label: "x", server_url: "https://x.example/mcp" }]
    }))).toBe("pass")
    expect(codeOf(capabilityCheck(anthropic, "messages", { container: { skills: [{ skill_id: "pdf" }] } }))).toBe(
      "pass"
    )
    expect(codeOf(capabilityCheck(anthropic, "messages", { container: { skills: [{ skill_id: "xlsx" }] } }))).toBe(
      "skill_denied"
    )
  })
})
