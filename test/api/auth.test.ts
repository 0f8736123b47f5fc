import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { signTokenRequest } from "../../src/auth/SigV4Token.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { PostgresTest } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"
import { fixtureStore, record, serveWithOrg } from "./harness.ts"

const store = fixtureStore({
  lookups: {
    "CVE-2021-44228": {
      aliases: [],
      records: [record("mitre", "CVE-2021-44228"), record("nist-nvd", "CVE-2021-44228")]
    }
  },
  exploits: {
    "CVE-2021-44228": [{
      uuid: "e1",
      cveId: "CVE-2021-44228",
      source: "nuclei",
      type: "poc",
      createdAt: 1,
      details: { nuclei: { path: "x.yaml" } }
    }]
  }
})

const Deps = Layer.mergeAll(Organizations.layer, store).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

const send = (url: string, init?: RequestInit) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(url, init)
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  })

const signedHeaders = (org: { readonly uuid: string; readonly secret: string }) => {
  const signed = signTokenRequest({ orgUuid: org.uuid, secret: org.secret, path: "/v1/auth/token", now: Date.now() })
  return { authorization: signed.authorization, "x-amz-date": signed.amzDate }
}

const signIn = (base: string, org: { readonly uuid: string; readonly secret: string }) =>
  Effect.map(send(`${base}/auth/token`, { headers: signedHeaders(org) }), (answer) => {
    assert.strictEqual(answer.status, 200)
    return answer.body.token as string
  })

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("API authentication (attack report findings 1, 3, 4, 5)", () => {
    it.effect("a rotation revokes the tokens signed in with the old secret at once (HttpApi and /vuln fast path); a new one works", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, orgs, org } = yield* serveWithOrg("rotated", { perMinute: 0, perWeek: 0 })
        // /vuln twice: the first fills the response cache, the second is the fast path's.
        const paths = [
          "/info/CVE-2021-44228",
          "/vuln/CVE-2021-44228",
          "/vuln/CVE-2021-44228",
          "/exploits/CVE-2021-44228"
        ]
        const old = yield* signIn(base, org)
        for (const path of paths) {
          assert.strictEqual((yield* send(base + path, { headers: bearer(old) })).status, 200, path)
        }

        const rotated = yield* orgs.rotateSecret(org.uuid)
        // The token verified (and was remembered) before the rotation; the cached /vuln answer is still there.
        for (const path of paths) {
          const refused = yield* send(base + path, { headers: bearer(old) })
          assert.deepStrictEqual(
            [refused.status, refused.body],
            [401, { success: false, error: "invalid token" }],
            path
          )
          assert.strictEqual(refused.headers.get("www-authenticate"), `ApiKey realm="vdb", Bearer realm="vdb"`)
        }
        // Signing in again with the old secret is refused; with the new one it works, on both paths.
        assert.strictEqual((yield* send(`${base}/auth/token`, { headers: signedHeaders(org) })).status, 401)
        const fresh = yield* signIn(base, rotated)
        for (const path of paths) {
          assert.strictEqual((yield* send(base + path, { headers: bearer(fresh) })).status, 200, path)
        }
        // And that one is revoked by the next rotation in turn.
        yield* orgs.rotateSecret(org.uuid)
        assert.strictEqual((yield* send(`${base}/vuln/CVE-2021-44228`, { headers: bearer(fresh) })).status, 401)
      })))

    it.effect("a token carries no part of the secret or the ApiKey; its signature has one spelling only", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, org } = yield* serveWithOrg("strict", { perMinute: 0, perWeek: 0 })
        const token = yield* signIn(base, org)
        const [header, payload, signature] = token.split(".") as [string, string, string]
        const claims = Buffer.from(payload, "base64url").toString("utf8")
        assert.notInclude(claims, org.secret)
        assert.notInclude(claims, org.apiKey.slice(org.apiKey.indexOf(":") + 1))

        // The last character of an HS512 signature carries 2 bits: its low 4 bits are unused, so
        // flipping the lowest one decodes to the same 64 bytes.
        const last = ALPHABET.indexOf(signature.at(-1)!)
        const sibling = signature.slice(0, -1) + ALPHABET[last ^ 1]
        assert.deepStrictEqual(Buffer.from(sibling, "base64url"), Buffer.from(signature, "base64url"))
        const malleated = `${header}.${payload}.${sibling}`
        for (const path of ["/info/CVE-2021-44228", "/vuln/CVE-2021-44228", "/vuln/CVE-2021-44228"]) {
          assert.strictEqual((yield* send(base + path, { headers: bearer(token) })).status, 200, path)
          const refused = yield* send(base + path, { headers: bearer(malleated) })
          assert.deepStrictEqual(
            [refused.status, refused.body],
            [401, { success: false, error: "invalid token" }],
            path
          )
        }
      })))

    it.effect("sign-in: an unknown organization and a wrong secret get the same 401", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, org } = yield* serveWithOrg("oracle", { perMinute: 0, perWeek: 0 })
        const otherSecret = "f".repeat(64)
        const unknown = yield* send(`${base}/auth/token`, {
          headers: signedHeaders({ uuid: randomUUID(), secret: otherSecret })
        })
        const wrong = yield* send(`${base}/auth/token`, {
          headers: signedHeaders({ uuid: org.uuid, secret: otherSecret })
        })
        assert.deepStrictEqual([unknown.status, unknown.body], [401, { success: false, error: "invalid credentials" }])
        assert.deepStrictEqual([wrong.status, wrong.body], [401, unknown.body])
        assert.strictEqual(wrong.headers.get("www-authenticate"), unknown.headers.get("www-authenticate"))
      })))

    it.effect("headers: the token is no-store; data answers are private (200, 304, errors, fast path); nosniff; HEAD /auth/token is 405 and mints nothing", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, org } = yield* serveWithOrg("headers", { perMinute: 0, perWeek: 100 })
        const isToken = (answer: Answer, what: string) => {
          assert.strictEqual(answer.headers.get("cache-control"), "no-store", what)
          assert.strictEqual(answer.headers.get("pragma"), "no-cache", what)
          assert.strictEqual(answer.headers.get("x-content-type-options"), "nosniff", what)
        }
        const isData = (answer: Answer, what: string) => {
          assert.strictEqual(answer.headers.get("cache-control"), "private, no-cache", what)
          assert.strictEqual(answer.headers.get("x-content-type-options"), "nosniff", what)
        }

        // HEAD first: refused before any verification, so nothing is counted (the GET after sees 99 left).
        const head = yield* send(`${base}/auth/token`, { method: "HEAD", headers: signedHeaders(org) })
        assert.strictEqual(head.status, 405)
        assert.strictEqual(head.headers.get("allow"), "GET, POST")
        assert.isNull(head.headers.get("x-ratelimit-remaining-week"))
        isToken(head, "HEAD")
        const minted = yield* send(`${base}/auth/token`, { headers: signedHeaders(org) })
        assert.strictEqual(minted.status, 200)
        assert.strictEqual(minted.headers.get("x-ratelimit-remaining-week"), "99")
        isToken(minted, "token")
        isToken(
          yield* send(`${base}/auth/token`, { headers: signedHeaders({ uuid: org.uuid, secret: "0".repeat(64) }) }),
          "401"
        )
        const post = yield* send(`${base}/auth/token`, { method: "POST" })
        assert.strictEqual(post.status, 400)
        assert.strictEqual(post.headers.get("x-content-type-options"), "nosniff")

        for (const authorization of [org.apiKey, `Bearer ${minted.body.token}`]) {
          const auth = { authorization }
          for (
            const path of [
              "/info/CVE-2021-44228",
              "/exploits/CVE-2021-44228",
              "/vuln/CVE-2021-44228",
              "/vuln/CVE-2021-44228"
            ]
          ) {
            const answer = yield* send(base + path, { headers: auth })
            assert.strictEqual(answer.status, 200, path)
            isData(answer, path)
            const etag = answer.headers.get("etag")!
            const revalidated = yield* send(base + path, { headers: { ...auth, "if-none-match": etag } })
            assert.strictEqual(revalidated.status, 304, path)
            isData(revalidated, `${path} 304`)
          }
          // The fast path in every coding it sends.
          for (const coding of ["gzip", "br", "identity"]) {
            isData(
              yield* send(`${base}/vuln/CVE-2021-44228`, { headers: { ...auth, "accept-encoding": coding } }),
              coding
            )
          }
          const missing = yield* send(`${base}/vuln/CVE-1999-0001`, { headers: auth })
          assert.strictEqual(missing.status, 404)
          isData(missing, "404")
        }
        const anonymous = yield* send(`${base}/info/CVE-2021-44228`)
        assert.strictEqual(anonymous.status, 401)
        isData(anonymous, "401")
      })))
  })
})
