import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { formatApiKey } from "../../../src/auth/ApiKey.ts"
import { MAX_PATTERN_LENGTH } from "../../../src/guardrails/CompiledRules.ts"
import { SqlBackends } from "../../support/database.ts"
import { type ManagedGateway, newOrg, startManagedGateway } from "./harness.ts"

/** Refusals of rule input the database cannot store, or that would cost too much to compile, over HTTP. */
describe.each(SqlBackends)("guardrail rule input on $name", ({ layer }) => {
  let gateway: ManagedGateway
  let org: { uuid: string; secret: string }

  beforeAll(async () => {
    gateway = await startManagedGateway(layer)
    org = await newOrg(gateway, "rules input")
  }, 60_000)
  afterAll(() => gateway?.close())

  const send = (method: string, path: string, body: unknown) =>
    fetch(`${gateway.url}/manage/v1/guardrails${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: formatApiKey(org.uuid, org.secret) },
      body: JSON.stringify(body)
    })

  const invalidRule = async (response: Response, message: RegExp) => {
    const text = await response.text()
    expect(response.status).toBe(400)
    const { error } = JSON.parse(text) as { error: { message: string; code: string } }
    expect(error.code).toBe("invalid_rule")
    expect(error.message).toMatch(message)
    return text
  }

  it("refuses NUL in a name or pattern with 400 invalid_rule, at create and PATCH (PostgreSQL cannot store it)", async () => {
    const rule = { rule_type: "blocked_pattern", action: "flag" }
    await invalidRule(await send("POST", "", { ...rule, name: "zero\u0000byte", pattern: "flagme" }), /printable/)
    await invalidRule(await send("POST", "", { ...rule, name: "line\nbreak", pattern: "flagme" }), /printable/)
    const text = await invalidRule(await send("POST", "", { ...rule, name: "nulpat", pattern: "a\u0000b" }), /NUL/)
    expect(text).not.toContain("a\\u0000b")

    const created = await send("POST", "", { ...rule, name: "plain", pattern: "flagme" })
    expect(created.status).toBe(201)
    const { uuid } = (await created.json()) as { uuid: string }
    await invalidRule(await send("PATCH", `/${uuid}`, { name: "a\u0000" }), /printable/)
    await invalidRule(await send("PATCH", `/${uuid}`, { pattern: "x\u0000" }), /NUL/)
    const shown = await fetch(`${gateway.url}/manage/v1/guardrails/${uuid}`, {
      headers: { authorization: formatApiKey(org.uuid, org.secret) }
    })
    expect(await shown.json()).toMatchObject({ name: "plain", pattern: "flagme" })
  })

  it("refuses the attack's 140 KB pattern, and one whose program is too large, with 400 invalid_rule", async () => {
    const words = Array.from({ length: 8000 }, (_, i) => `w${i.toString(36)}q[a-z]{1,3}`)
    const big = await send("POST", "", {
      name: "bb1",
      rule_type: "blocked_pattern",
      action: "flag",
      pattern: `(?:${words.join("|")})`
    })
    const text = await invalidRule(big, new RegExp(`longer than ${MAX_PATTERN_LENGTH} characters`))
    expect(text).not.toContain("w0q")
    await invalidRule(
      await send("POST", "", { name: "letters", rule_type: "blocked_pattern", pattern: "[\\p{L}\\p{M}]{2,40}" }),
      /compiles to more than RE2's 1 MiB budget/
    )
  })
})
