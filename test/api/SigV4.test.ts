import { existsSync, readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import {
  canonicalRequest,
  hashHex,
  signatureOf,
  signedHeaderNames,
  type SigV4Request,
  stringToSign
} from "../../src/auth/SigV4.ts"
import { signTokenRequest, verifyTokenRequest } from "../../src/auth/SigV4Token.ts"

const SUITE = fileURLToPath(new URL("../fixtures/sigv4-test-suite/", import.meta.url))

interface Context {
  readonly credentials: { readonly access_key_id: string; readonly secret_access_key: string; readonly token?: string }
  readonly normalize: boolean
  readonly region: string
  readonly service: string
  readonly sign_body: boolean
  readonly timestamp: string
  readonly omit_session_token?: boolean
}

/** Parses the suite's raw `request.txt`: request line, headers (with folded continuation lines), body. */
const parseRequest = (text: string) => {
  const [head, ...rest] = text.split("\n\n")
  const lines = head!.split("\n")
  const [method, target] = lines[0]!.split(" ") as [string, string]
  const requestLine = lines[0]!
  const fullTarget = requestLine.slice(method.length + 1, requestLine.lastIndexOf(" HTTP/"))
  void target
  const headers: Array<[string, string]> = []
  for (const line of lines.slice(1)) {
    if (line === "") continue
    if (/^\s/.test(line) && headers.length > 0) {
      headers[headers.length - 1]![1] += " " + line.trim()
      continue
    }
    const colon = line.indexOf(":")
    headers.push([line.slice(0, colon), line.slice(colon + 1)])
  }
  const q = fullTarget.indexOf("?")
  return {
    method,
    path: q === -1 ? fullTarget : fullTarget.slice(0, q),
    query: q === -1 ? "" : fullTarget.slice(q + 1),
    headers,
    body: rest.join("\n\n")
  }
}

const cases = readdirSync(SUITE).sort()
const headerCases = cases.filter((name) => existsSync(`${SUITE}/${name}/header-canonical-request.txt`))

describe("AWS SigV4 test suite (SHA-256) through the shared canonicalisation", () => {
  it("has 38 cases, each with header-signing expectations", () => {
    expect(cases).toHaveLength(38)
    expect(headerCases).toHaveLength(38)
  })

  it.each(headerCases)("%s", (name) => {
    const dir = `${SUITE}/${name}`
    const context = JSON.parse(readFileSync(`${dir}/context.json`, "utf8")) as Context
    const raw = parseRequest(readFileSync(`${dir}/request.txt`, "utf8"))
    const amzDate = context.timestamp.replace(/[-:]/g, "")
    const payloadHash = hashHex("sha256", raw.body)
    // What the signer adds before signing, as the suite's signed requests show.
    const headers: Array<readonly [string, string]> = [...raw.headers, ["X-Amz-Date", amzDate]]
    if (context.credentials.token !== undefined && context.omit_session_token !== true) {
      headers.push(["X-Amz-Security-Token", context.credentials.token])
    }
    if (context.sign_body) headers.push(["x-amz-content-sha256", payloadHash])
    const request: SigV4Request = { method: raw.method, path: raw.path, query: raw.query, headers, payloadHash }
    const scope = { date: amzDate.slice(0, 8), region: context.region, service: context.service }

    const canonical = canonicalRequest(request, signedHeaderNames(headers), { normalize: context.normalize })
    expect(canonical).toBe(readFileSync(`${dir}/header-canonical-request.txt`, "utf8"))
    const toSign = stringToSign("sha256", amzDate, scope, canonical)
    expect(toSign).toBe(readFileSync(`${dir}/header-string-to-sign.txt`, "utf8"))
    expect(signatureOf("sha256", context.credentials.secret_access_key, scope, toSign))
      .toBe(readFileSync(`${dir}/header-signature.txt`, "utf8").trim())
  })
})

describe("AWS4-HMAC-SHA512 token request", () => {
  const org = "6f1c7a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
  const secret = "a".repeat(64)
  const now = Date.UTC(2026, 0, 15, 12, 0, 0)
  const signed = signTokenRequest({ orgUuid: org, secret, path: "/v1/auth/token", now })

  it("signs only x-amz-date with SHA-512 everywhere", () => {
    expect(signed.amzDate).toBe("20260115T120000Z")
    expect(signed.authorization).toMatch(
      new RegExp(
        `^AWS4-HMAC-SHA512 Credential=${org}/20260115/us-east-1/vdb/aws4_request, SignedHeaders=x-amz-date, Signature=[0-9a-f]{128}$`
      )
    )
  })

  const verify = (overrides: Partial<{ authorization: string; amzDate: string; now: number; path: string }>) =>
    verifyTokenRequest({
      authorization: overrides.authorization ?? signed.authorization,
      amzDate: overrides.amzDate ?? signed.amzDate,
      path: overrides.path ?? "/v1/auth/token",
      query: "",
      now: overrides.now ?? now
    })

  it("parses and accepts a fresh signature", () => {
    const parsed = verify({})
    expect(parsed._tag).toBe("Parsed")
    if (parsed._tag !== "Parsed") return
    expect(parsed.orgUuid).toBe(org)
    expect(parsed.verify(secret)).toBe(true)
    expect(parsed.verify("b".repeat(64))).toBe(false)
  })

  it("rejects skew beyond 5 minutes either way", () => {
    expect(verify({ now: now + 5 * 60_000 })._tag).toBe("Parsed")
    expect(verify({ now: now + 5 * 60_000 + 1000 })._tag).toBe("Rejected")
    expect(verify({ now: now - 5 * 60_000 - 1000 })._tag).toBe("Rejected")
  })

  it("rejects a credential date that disagrees with X-Amz-Date, wrong scope or signed headers", () => {
    const other = signTokenRequest({ orgUuid: org, secret, path: "/v1/auth/token", now: now - 86_400_000 })
    expect(verify({ authorization: other.authorization })._tag).toBe("Rejected")
    for (
      const [from, to] of [
        ["us-east-1", "eu-west-1"],
        ["/vdb/", "/s3/"],
        ["aws4_request", "aws4_requesx"],
        ["SignedHeaders=x-amz-date", "SignedHeaders=host;x-amz-date"],
        ["AWS4-HMAC-SHA512", "AWS4-HMAC-SHA256"]
      ] as const
    ) {
      expect(verify({ authorization: signed.authorization.replace(from, to) })._tag).toBe("Rejected")
    }
    expect(verify({ amzDate: "2026-01-15T12:00:00Z" })._tag).toBe("Rejected")
  })

  it("binds the signature to the path", () => {
    const parsed = verify({ path: "/v1/auth/token2" })
    expect(parsed._tag === "Parsed" && parsed.verify(secret)).toBe(false)
  })
})
