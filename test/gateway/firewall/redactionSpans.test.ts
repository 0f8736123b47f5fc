import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FirewallGateway, ORG, run, SERVICE_KEY, startFirewallGateway } from "./harness.ts"

/**
 * The guardrails tell the splice exactly which characters each redaction replaced (carried back
 * through every rule that ran after it), so nothing is guessed from the text: whatever the
 * characters around a match, and however long the string, only the matched characters are
 * written anew and every other byte reaches the provider as the client sent it.
 */
let gateway: FirewallGateway
beforeAll(async () => {
  gateway = await startFirewallGateway({ realGuardrails: true })
  await run(
    gateway.guardrails.create(ORG, {
      name: "ssn",
      rule_type: "pii_redact",
      pattern: "\\d{3}-\\d{2}-\\d{4}",
      priority: 10
    })
  )
  // Runs on the ssn rule's output: `]+77` only exists next to an earlier redaction (an overlap).
  await run(
    gateway.guardrails.create(ORG, {
      name: "key",
      rule_type: "pii_redact",
      pattern: "KEY\\d+|\\]\\+\\d+",
      priority: 20
    })
  )
})
afterAll(() => gateway.close())

const raw = String.raw

/** What the provider received for a chat request whose one message's content is the literal `content`. */
const forwardedContent = async (content: string) => {
  const before = gateway.upstream.received.length
  const response = await fetch(`${gateway.url}/openai/${ORG}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" },
    body: `{"model":"gpt-4.1","messages":[{"role":"user","content":${content}}]}`
  })
  expect(response.status).toBe(200)
  expect(response.headers.get("x-gateway-firewall-decision")).toBe("redact")
  const received = gateway.upstream.received.slice(before)
  expect(received).toHaveLength(1)
  const body = received[0]!.body.toString("utf8")
  const prefix = `{"model":"gpt-4.1","messages":[{"role":"user","content":`
  expect(body.startsWith(prefix) && body.endsWith("}]}")).toBe(true)
  return body.slice(prefix.length, -3)
}

describe("a redaction rewrites exactly the characters its rules matched", () => {
  it("two matches one escaped character apart, the character also in [REDACTED]", async () => {
    expect(await forwardedContent(raw`"caf\u00e9 123-45-6789\u0044123-45-6789 a\/b"`))
      .toBe(raw`"caf\u00e9 [REDACTED]\u0044[REDACTED] a\/b"`)
    expect(await forwardedContent(raw`"\u0044123-45-6789\u0044\u0045123-45-6789\u005d\/"`))
      .toBe(raw`"\u0044[REDACTED]\u0044\u0045[REDACTED]\u005d\/"`)
  })

  it("a match followed (or preceded) by an escaped character of [REDACTED]", async () => {
    expect(await forwardedContent(raw`"\u00e9 123-45-6789\u0045KEY42 a\/b"`)).toBe(
      raw`"\u00e9 [REDACTED]\u0045[REDACTED] a\/b"`
    )
    expect(await forwardedContent(raw`"123-45-6789\u0045 \u00e9"`)).toBe(raw`"[REDACTED]\u0045 \u00e9"`)
    expect(await forwardedContent(raw`"x\u005b123-45-6789\u0045\u0044\u005d"`)).toBe(
      raw`"x\u005b[REDACTED]\u0045\u0044\u005d"`
    )
  })

  it("two rules whose matches touch, or overlap in the text the first one wrote", async () => {
    // Touch: the key starts where the ssn ended; the two are one change, and the escapes beside them stay.
    expect(await forwardedContent(raw`"\u00e9 123-45-6789\u005d+77\/"`)).toBe(raw`"\u00e9 [REDACTED][REDACTED]\/"`)
    expect(await forwardedContent(raw`"\u00e9 123-45-6789KEY42\u0044\u005d+7 \/"`))
      .toBe(raw`"\u00e9 [REDACTED][REDACTED]\u0044[REDACTED] \/"`)
    // Overlap: `]+7` takes the last character of the ssn's [REDACTED].
    expect(await forwardedContent(raw`"\u00e9 KEY4\u0041123-45-6789+7 \/"`)).toBe(
      raw`"\u00e9 [REDACTED]\u0041[REDACTED[REDACTED] \/"`
    )
    expect(await forwardedContent(raw`"\u00e9 123-45-6789+77\u0020\/"`)).toBe(raw`"\u00e9 [REDACTED[REDACTED]\u0020\/"`)
    // A key written with escapes: its escapes go with it, the rest stays.
    expect(await forwardedContent(raw`"123-45-6789 \u004bEY1\u0031 \u004b"`)).toBe(raw`"[REDACTED] [REDACTED] \u004b"`)
  })

  it("a very long string with many escapes, and a run of matches a few escaped characters apart", async () => {
    // 400 matches two characters apart make one region of the old diff, past its alignment budget.
    const filler = (n: number) => Array.from({ length: n }, (_, i) => raw`abc \u00e9${i % 10}\/\n`).join("")
    const sent = filler(3000) + raw`123-45-6789\u00e9\/`.repeat(400) + filler(3000)
    const expected = filler(3000) + raw`[REDACTED]\u00e9\/`.repeat(400) + filler(3000)
    expect(sent.length).toBeGreaterThan(90_000)
    expect(await forwardedContent(`"${sent}"`)).toBe(`"${expected}"`)
  })

  it("a redaction in a data: document writes its payload anew, and keeps the rest of the literal and the body as sent", async () => {
    const decoded = "notes??? caf\u00e9 123-45-6789 end"
    const payload = Buffer.from(decoded).toString("base64")
    expect(payload).toContain("/")
    // The client escapes every slash, in the media type and in the payload.
    const literal = `"data:text\\/plain;base64,${payload.replaceAll("/", "\\/")}"`
    const head = raw`{"model":"gpt-4.1","messages":[{"role":"user","content":[{"type":"text","text":"caf\u00e9 \/"},` +
      raw`{"type":"file","file":{"filename":"n.txt","file_data":`
    const tail = `}}]}]}`
    const before = gateway.upstream.received.length
    const response = await fetch(`${gateway.url}/openai/${ORG}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" },
      body: head + literal + tail
    })
    expect(response.status).toBe(200)
    const body = gateway.upstream.received[before]!.body.toString("utf8")
    expect(body.startsWith(head + raw`"data:text\/plain;base64,`)).toBe(true)
    expect(body.endsWith(tail)).toBe(true)
    const written = JSON.parse(body.slice(head.length, -tail.length)) as string
    expect(Buffer.from(written.slice(written.indexOf(",") + 1), "base64").toString()).toBe(
      "notes??? caf\u00e9 [REDACTED] end"
    )
  })
})
