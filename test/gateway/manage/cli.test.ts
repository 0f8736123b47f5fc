import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { formatApiKey } from "../../../src/auth/ApiKey.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../../support/processes.ts"

const json = <A = any>(stdout: string): A => JSON.parse(stdout) as A

/** One line on stderr, naming the problem, and exit 1. */
const expectOneLineRefusal = (run: { code: number; stdout: string; stderr: string }, pattern: RegExp) => {
  expect(run.code).toBe(1)
  const lines = run.stderr.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("{"))
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(pattern)
}

describe("bin/vdb gateway rule|policy|check without a running server (in-process)", () => {
  const env = { VDB_DATA_DIR: tempDataDir() }

  it("adds a rule and dry-runs a text against it", async () => {
    const org = json((await runVdb(["org", "create", "--name", "cli offline", "--json"], env)).stdout).uuid as string
    const added = await runVdb(
      [
        "gateway",
        "rule",
        "add",
        "--org",
        org,
        "--name",
        "phone",
        "--type",
        "pii_redact",
        "--pattern",
        "[0-9]{3}-[0-9]{4}",
        "--json"
      ],
      env
    )
    expect(added.code).toBe(0)
    expect(json(added.stdout)).toMatchObject({
      name: "phone",
      rule_type: "pii_redact",
      action: "redact",
      enabled: true
    })
    expect(json(added.stdout).uuid).toMatch(/^[0-9a-f-]{36}$/)

    // Without a server each command opens the embedded database, which admits one process: one at a time.
    const check = await runVdb(["gateway", "check", "--org", org, "--text", "call 555-1234", "--json"], env)
    expect(check.code).toBe(0)
    expect(json(check.stdout)).toEqual({ decision: "redact", rules: ["phone"], redactions: 1 })
    expect(check.stdout).not.toContain("555-1234")
  }, 60_000)
})

describe("bin/vdb gateway rule|policy|check over the admin socket", () => {
  let server: RunningServer
  let org: { uuid: string; secret: string }

  beforeAll(async () => {
    server = await startServer({ VDB_DATA_DIR: tempDataDir() }, ["gateway"])
    const created = json(
      (await runVdb(
        ["org", "create", "--name", "cli online", "--per-minute", "0", "--per-week", "0", "--json"],
        server.env
      )).stdout
    )
    org = { uuid: created.uuid, secret: created.secret }
  }, 90_000)
  afterAll(() => server?.stop())

  const vdb = (...args: Array<string>) => runVdb(["gateway", ...args], server.env)
  const manage = (path: string) =>
    fetch(`http://127.0.0.1:${server.ports.gateway}/manage/v1${path}`, {
      headers: { authorization: formatApiKey(org.uuid, org.secret) }
    })
      .then((r) => r.json() as Promise<any>)

  it.concurrent(
    "manages rules: add, list, disable, enable, remove; the management API sees the same rules",
    async () => {
      const added = await vdb(
        "rule",
        "add",
        "--org",
        org.uuid,
        "--name",
        "launch",
        "--type",
        "blocked_pattern",
        "--action",
        "block",
        "--pattern",
        "launch code",
        "--priority",
        "5",
        "--disabled",
        "--json"
      )
      expect(added.code).toBe(0)
      const rule = json(added.stdout)
      expect(rule).toMatchObject({ name: "launch", priority: 5, enabled: false, compiles: true })

      const [seen, enabled] = await Promise.all([
        manage("/guardrails"),
        vdb("rule", "enable", "--org", org.uuid, rule.uuid, "--json")
      ])
      expect(seen.data.map((r: { uuid: string }) => r.uuid)).toEqual([rule.uuid])
      expect(json(enabled.stdout).enabled).toBe(true)
      const [blocked, listed] = await Promise.all([
        vdb("check", "--org", org.uuid, "--text", "the launch code is 1234", "--json"),
        vdb("rule", "list", "--org", org.uuid, "--json")
      ])
      expect(json(listed.stdout)).toEqual([expect.objectContaining({ uuid: rule.uuid, enabled: true })])
      expect(json(blocked.stdout)).toMatchObject({ decision: "block", rules: ["launch"], blocked_by: "launch" })
      const disabled = await vdb("rule", "disable", "--org", org.uuid, rule.uuid)
      expect(disabled.stdout).toContain(`disabled guardrail rule ${rule.uuid}`)
      expect((await manage(`/guardrails/${rule.uuid}`)).enabled).toBe(false)
      expect((await vdb("rule", "remove", "--org", org.uuid, rule.uuid)).code).toBe(0)
      expect((await manage("/guardrails")).data).toEqual([])

      const [again, badPattern, badType] = await Promise.all([
        vdb("rule", "remove", "--org", org.uuid, rule.uuid),
        vdb("rule", "add", "--org", org.uuid, "--name", "x", "--type", "blocked_pattern", "--pattern", "(abc"),
        vdb("rule", "add", "--org", org.uuid, "--name", "x", "--type", "regex")
      ])
      expectOneLineRefusal(again, /^vdb: guardrail rule .* does not exist$/)
      expectOneLineRefusal(badPattern, /^vdb: .*missing \)/)
      expectOneLineRefusal(
        badType,
        /^vdb: --type: "regex" is not one of blocked_pattern, pii_redact, delimiter_integrity$/
      )
    },
    60_000
  )

  it.concurrent(
    "manages policy entries: allow, deny, strip, list, remove; check applies the provider policy",
    async () => {
      const [allow, deny, strip] = await Promise.all([
        vdb("policy", "allow", "--org", org.uuid, "--kind", "model", "--provider", "openai", "gpt-4o-mini", "--json"),
        vdb("policy", "deny", "--org", org.uuid, "--kind", "provider", "groq", "--json"),
        vdb("policy", "strip", "--org", org.uuid, "--kind", "tool", "shell", "--json")
      ])
      expect(json(allow.stdout)).toMatchObject({
        kind: "model",
        effect: "allow",
        provider: "openai",
        value: "gpt-4o-mini"
      })
      expect(json(deny.stdout)).toMatchObject({ kind: "provider", effect: "deny", provider: null, value: "groq" })
      expect(json(strip.stdout)).toMatchObject({ kind: "tool", effect: "strip", value: "shell" })

      const listed = json<Array<{ uuid: string }>>((await vdb("policy", "list", "--org", org.uuid, "--json")).stdout)
      expect(listed.map((e) => e.uuid).sort()).toEqual(
        [json(allow.stdout).uuid, json(deny.stdout).uuid, json(strip.stdout).uuid].sort()
      )
      expect((await manage("/policies")).data).toHaveLength(3)

      const refused = await vdb("check", "--org", org.uuid, "--provider", "groq", "--text", "hello", "--json")
      expect(json(refused.stdout)).toMatchObject({ decision: "block", refusal: { code: "provider_denied" } })

      expect((await vdb("policy", "remove", "--org", org.uuid, json(deny.stdout).uuid)).code).toBe(0)
      expect((await manage("/policies")).data).toHaveLength(2)
      const [badKind, badOrg, typo] = await Promise.all([
        vdb("policy", "strip", "--org", org.uuid, "--kind", "provider", "groq"),
        vdb("policy", "allow", "--org", "not-a-uuid", "--kind", "tool", "x"),
        vdb("policy", "deny", "--org", org.uuid, "--kind", "model", "--provider", "opnai", "gpt-4o")
      ])
      expectOneLineRefusal(badKind, /^vdb: --kind: "provider" is not one of tool, mcp$/)
      expectOneLineRefusal(badOrg, /^vdb: --org: not a UUID/)
      // A typo in the provider would never apply: refused, naming the known slugs.
      // The server's admin handler refuses it (the same check as the management API's), so any admin client is held to it.
      expectOneLineRefusal(
        typo,
        /^vdb: unknown provider "opnai" \(known: openai, .*, or a custom provider of this organization\)$/
      )
      expect((await manage("/policies")).data).toHaveLength(2)
      // The dry run answers a provider the relay does not serve as the relay does: unknown_provider, not the rules' decision.
      const nosuch = await vdb("check", "--org", org.uuid, "--provider", "nosuch", "--text", "hello", "--json")
      expect(json(nosuch.stdout)).toMatchObject({ decision: "block", refusal: { code: "unknown_provider" } })
    },
    60_000
  )
})
