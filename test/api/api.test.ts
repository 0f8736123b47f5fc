import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { SignJWT } from "jose"
import { formatApiKey } from "../../src/auth/ApiKey.ts"
import { formatAmzDate } from "../../src/auth/SigV4.ts"
import { signTokenRequest } from "../../src/auth/SigV4Token.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { SecretBox } from "../../src/secrets/SecretBox.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"
import { clientFor, fixtureStore, record, serveApi } from "./harness.ts"

const store = fixtureStore({
  lookups: {
    "CVE-2021-44228": {
      aliases: ["GHSA-jfh8-c2jp-5v3q"],
      records: [
        record("mitre", "CVE-2021-44228"),
        record("nist-nvd", "CVE-2021-44228"),
        record("ghsa", "GHSA-jfh8-c2jp-5v3q")
      ]
    },
    "GHSA-jfh8-c2jp-5v3q": { aliases: ["CVE-2021-44228"], records: [record("ghsa", "GHSA-jfh8-c2jp-5v3q")] },
    "CVE-2024-0001": { aliases: [], records: [record("euvd", "EUVD-2024-1", true)] }
  },
  exploits: {
    "CVE-2021-44228": [
      {
        uuid: "e1",
        cveId: "CVE-2021-44228",
        source: "exploit-db",
        type: "exploit",
        createdAt: 100,
        details: { exploitDb: { id: "50592", rawContent: "#!/bin/sh" } }
      },
      {
        uuid: "e2",
        cveId: "CVE-2021-44228",
        source: "metasploit",
        type: "exploit",
        createdAt: 300,
        details: { metasploit: { modulePath: "x", moduleContent: "ruby" } }
      },
      {
        uuid: "e3",
        cveId: "CVE-2021-44228",
        source: "nuclei",
        type: "poc",
        createdAt: 200,
        details: { nuclei: { path: "cves/x.yaml" } }
      }
    ]
  }
})

const Deps = Layer.mergeAll(Organizations.layer, store).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

type DepsOf = Organizations | VulnStore | SqlClient.SqlClient | SecretBox

const startServer = Effect.gen(function*() {
  const ctx = yield* Effect.context<DepsOf>()
  return yield* serveApi(Layer.succeedContext(ctx))
})

const raw = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  })

const newOrg = (limits: { perMinute?: number; perWeek?: number } = { perMinute: 0, perWeek: 0 }) =>
  Effect.flatMap(Organizations, (orgs) => orgs.create({ name: "acme", ...limits }))

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("vulnerability data API", () => {
    it.effect("ApiKey: /info, /vuln, /exploits through the typed client", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer
        const org = yield* newOrg()
        const client = yield* clientFor(base, org.uuid, org.secret, "apiKey")

        const info = yield* client.vulns.info({ params: { identifier: "2021-44228" } })
        assert.strictEqual(info._identifier, "CVE-2021-44228")
        assert.isTrue(info.matched)
        assert.isTrue(info.gcve)
        assert.isFalse(info.cache_hit)
        assert.deepStrictEqual(info.sources.map((s) => s.name), ["mitre", "nist-nvd", "ghsa"])
        assert.deepStrictEqual(info.aliases, ["GHSA-jfh8-c2jp-5v3q"])
        assert.strictEqual(info.references, 6)
        assert.strictEqual(info.links[0]!.type, "page")
        assert.include(info.links.map((l) => l.format), "cvelistV5")
        const again = yield* client.vulns.info({ params: { identifier: "cve-2021-44228" } })
        assert.isTrue(again.cache_hit)

        const processing = yield* client.vulns.info({ params: { identifier: "CVE-2024-0001" } })
        assert.deepStrictEqual(processing.sources, [{ name: "euvd", processing: true }])

        const notFound = yield* client.vulns.info({ params: { identifier: "CVE-1999-0001" } }).pipe(Effect.flip)
        assert.strictEqual(notFound._tag, "NotFound")

        const records = yield* client.vulns.vuln({ params: { identifier: "2021-44228" } })
        assert.strictEqual(records.length, 3)
        const ghsa = yield* client.vulns.vuln({ params: { identifier: "ghsa-JFH8-c2jp-5v3q" } })
        assert.strictEqual(ghsa.length, 1)
        const bad = yield* client.vulns.vuln({ params: { identifier: "CVE-abc" } }).pipe(Effect.flip)
        assert.strictEqual(bad._tag, "BadRequest")
        const missing = yield* client.vulns.vulnMissing().pipe(Effect.flip)
        assert.strictEqual(missing._tag, "BadRequest")
        const unknown = yield* client.vulns.vuln({ params: { identifier: "RUSTSEC-2020-0001" } }).pipe(Effect.flip)
        assert.strictEqual(unknown._tag, "NotFound")

        const exploits = yield* client.vulns.exploits({ params: { identifier: "CVE-2021-44228" }, query: { limit: 2 } })
        assert.strictEqual(exploits.count, 3)
        assert.deepStrictEqual(exploits.exploits.map((e) => e.uuid), ["e2", "e3"])
        assert.strictEqual(exploits.summary.exploitDb, 1)
        assert.strictEqual(exploits.summary.other, 0)
        assert.isUndefined((exploits.exploits[0]!.metasploit as any).moduleContent)
        const withContent = yield* client.vulns.exploits({
          params: { identifier: "CVE-2021-44228" },
          query: { include_content: true, offset: 2 }
        })
        assert.deepStrictEqual(withContent.exploits.map((e) => e.uuid), ["e1"])
        assert.strictEqual((withContent.exploits[0]!.exploitDb as any).rawContent, "#!/bin/sh")
        const noneKnown = yield* client.vulns.exploits({ params: { identifier: "CVE-2024-0001" }, query: {} })
        assert.strictEqual(noneKnown.count, 0)
        const exploitsUnknown = yield* client.vulns.exploits({ params: { identifier: "CVE-1999-0001" }, query: {} })
          .pipe(Effect.flip)
        assert.strictEqual(exploitsUnknown._tag, "NotFound")
      })))

    it.effect("400s render as {success:false,error}: bad exploit paging, POST /auth/token, missing identifier", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer
        const org = yield* newOrg()
        const headers = { authorization: formatApiKey(org.uuid, org.secret) }
        for (const query of ["limit=0", "limit=1001", "limit=abc", "offset=-1", "include_content=maybe"]) {
          const r = yield* raw(`${base}/exploits/CVE-2021-44228?${query}`, { headers })
          assert.strictEqual(r.status, 400, query)
          assert.strictEqual(r.body.success, false)
          assert.isString(r.body.error)
        }
        // What was expected and where, in one line; never the value sent.
        const named = yield* raw(`${base}/exploits/CVE-2021-44228?include_content=SECRET-VALUE`, { headers })
        assert.strictEqual(named.body.error, `invalid query: Expected "true" | "false"; at ["include_content"]`)
        const post = yield* raw(`${base}/auth/token`, { method: "POST" })
        assert.deepStrictEqual([post.status, post.body.success], [400, false])
        const missing = yield* raw(`${base}/vuln`, { headers })
        assert.deepStrictEqual([missing.status, missing.body.success], [400, false])
        const noAuth = yield* raw(`${base}/vuln/CVE-2021-44228`)
        assert.deepStrictEqual(noAuth.status, 401)
        assert.deepStrictEqual(Object.keys(noAuth.body).sort(), ["error", "success"])
        for (const path of ["/info/CVE-2000-0500", "/vuln/CVE-2000-0500", "/exploits/CVE-2000-0500"]) {
          const boom = yield* raw(`${base}${path}`, { headers })
          assert.deepStrictEqual(
            [boom.status, boom.body],
            [500, { success: false, error: "internal server error" }],
            path
          )
        }
        const openapi = yield* raw(`${base}/openapi.json`)
        assert.strictEqual(openapi.status, 200)
        assert.match(openapi.body.openapi, /^3\.1/)
        // The Scalar bundle is loaded on the first request (src/api/ApiDocs.ts), then reused.
        const page = () =>
          Effect.promise(async () => {
            const docs = await fetch(base.replace(/\/v1$/, "/docs"))
            return { status: docs.status, type: docs.headers.get("content-type"), body: await docs.text() }
          })
        const first = yield* page()
        assert.strictEqual(first.status, 200)
        assert.match(first.type ?? "", /^text\/html/)
        assert.include(first.body, "<script")
        assert.include(first.body, "/docs/scalar.js?v=")
        assert.deepStrictEqual(yield* page(), first)
      })))

    it.effect("JWT: sign-in with AWS4-HMAC-SHA512, Bearer requests, expiry, tampering, foreign issuer", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer
        const org = yield* newOrg()
        const client = yield* clientFor(base, org.uuid, org.secret, "jwt")
        const info = yield* client.vulns.info({ params: { identifier: "CVE-2021-44228" } })
        assert.strictEqual(info._identifier, "CVE-2021-44228")

        const now = Date.now()
        const signed = signTokenRequest({ orgUuid: org.uuid, secret: org.secret, path: "/v1/auth/token", now })
        const token = yield* raw(`${base}/auth/token`, {
          headers: { authorization: signed.authorization, "x-amz-date": signed.amzDate }
        })
        assert.strictEqual(token.status, 200)
        assert.strictEqual(token.body.iss, "urn:vendor:vdb")
        assert.strictEqual(token.body.sub, `urn:uuid:${org.uuid}`)
        assert.approximately(token.body.exp, Math.floor(now / 1000) + 900, 5)
        const ok = yield* raw(`${base}/vuln/CVE-2021-44228`, {
          headers: { authorization: `Bearer ${token.body.token}` }
        })
        assert.strictEqual(ok.status, 200)

        const key = Redacted.value((yield* SecretBox).derive("jwt-signing"))
        const forge = (iss: string, iat: number, exp: number, signingKey: Uint8Array = key) =>
          Effect.promise(() =>
            new SignJWT({}).setProtectedHeader({ alg: "HS512" }).setIssuer(iss).setSubject(`urn:uuid:${org.uuid}`)
              .setIssuedAt(iat).setExpirationTime(exp).sign(signingKey)
          )
        const t = Math.floor(now / 1000)
        // Expired: our own token, good once; spec 1 puts "credentials inactive or expired" under 403.
        const expired = yield* raw(`${base}/vuln/CVE-2021-44228`, {
          headers: { authorization: `Bearer ${yield* forge("urn:vendor:vdb", t - 1000, t - 100)}` }
        })
        assert.deepStrictEqual([expired.status, expired.body], [403, { success: false, error: "token expired" }])
        assert.isNull(expired.headers.get("www-authenticate"))
        for (
          const bad of [
            yield* forge("urn:vendor:other", t, t + 900),
            yield* forge("urn:vendor:vdb", t, t + 900, new Uint8Array(64)),
            token.body.token.slice(0, -4) + "AAAA"
          ]
        ) {
          const r = yield* raw(`${base}/vuln/CVE-2021-44228`, { headers: { authorization: `Bearer ${bad}` } })
          assert.strictEqual(r.status, 401)
          assert.strictEqual(r.body.success, false)
          assert.strictEqual(r.headers.get("www-authenticate"), `ApiKey realm="vdb", Bearer realm="vdb"`)
        }

        // Skew, scope and signed-header violations of the sign-in request.
        const skewed = signTokenRequest({
          orgUuid: org.uuid,
          secret: org.secret,
          path: "/v1/auth/token",
          now: now - 6 * 60_000
        })
        const wrongSecret = signTokenRequest({ orgUuid: org.uuid, secret: "f".repeat(64), path: "/v1/auth/token", now })
        for (
          const headers of [
            { authorization: skewed.authorization, "x-amz-date": skewed.amzDate },
            { authorization: wrongSecret.authorization, "x-amz-date": wrongSecret.amzDate },
            {
              authorization: signed.authorization.replace("x-amz-date", "host;x-amz-date"),
              "x-amz-date": signed.amzDate
            },
            { authorization: signed.authorization.replace("us-east-1", "eu-west-1"), "x-amz-date": signed.amzDate },
            { authorization: signed.authorization, "x-amz-date": formatAmzDate(now + 86_400_000) },
            { authorization: signed.authorization },
            {}
          ]
        ) {
          const r = yield* raw(`${base}/auth/token`, { headers })
          assert.strictEqual(r.status, 401, JSON.stringify(headers))
          assert.strictEqual(r.body.success, false)
          assert.strictEqual(r.headers.get("www-authenticate"), `AWS4-HMAC-SHA512 realm="vdb"`)
        }
      })))

    it.effect("rotation invalidates the old key at once; deactivation gives 403 to ApiKey, Bearer and sign-in", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer
        const orgs = yield* Organizations
        const org = yield* newOrg()
        const url = `${base}/vuln/CVE-2021-44228`
        assert.strictEqual((yield* raw(url, { headers: { authorization: org.apiKey } })).status, 200)
        const rotated = yield* orgs.rotateSecret(org.uuid)
        assert.strictEqual((yield* raw(url, { headers: { authorization: org.apiKey } })).status, 401)
        assert.strictEqual((yield* raw(url, { headers: { authorization: rotated.apiKey } })).status, 200)

        const signed = signTokenRequest({
          orgUuid: org.uuid,
          secret: rotated.secret,
          path: "/v1/auth/token",
          now: Date.now()
        })
        const token = yield* raw(`${base}/auth/token`, {
          headers: { authorization: signed.authorization, "x-amz-date": signed.amzDate }
        })
        assert.strictEqual(token.status, 200)

        yield* orgs.setActive(org.uuid, false)
        const viaKey = yield* raw(url, { headers: { authorization: rotated.apiKey } })
        assert.deepStrictEqual([viaKey.status, viaKey.body], [403, { success: false, error: "organization inactive" }])
        assert.strictEqual(viaKey.headers.get("x-ratelimit-limit-minute"), "0")
        assert.strictEqual((yield* raw(url, { headers: { authorization: `Bearer ${token.body.token}` } })).status, 403)
        const again = signTokenRequest({
          orgUuid: org.uuid,
          secret: rotated.secret,
          path: "/v1/auth/token",
          now: Date.now()
        })
        assert.strictEqual(
          (yield* raw(`${base}/auth/token`, {
            headers: { authorization: again.authorization, "x-amz-date": again.amzDate }
          })).status,
          403
        )
        yield* orgs.setActive(org.uuid, true)
        assert.strictEqual((yield* raw(url, { headers: { authorization: rotated.apiKey } })).status, 200)
      })))

    it.effect("rate limits: headers on every response, 429 with Retry-After, /auth/token counted, usage logged", () =>
      Effect.scoped(Effect.gen(function*() {
        // Stay clear of a minute boundary so the five requests share one window.
        const second = new Date().getUTCSeconds()
        if (second > 50) yield* Effect.sleep(`${61 - second} seconds`)
        const base = yield* startServer
        const org = yield* newOrg({ perMinute: 5, perWeek: 1000 })
        const signed = signTokenRequest({
          orgUuid: org.uuid,
          secret: org.secret,
          path: "/v1/auth/token",
          now: Date.now()
        })
        const token = yield* raw(`${base}/auth/token`, {
          headers: { authorization: signed.authorization, "x-amz-date": signed.amzDate }
        })
        assert.strictEqual(token.status, 200)
        assert.strictEqual(token.headers.get("ratelimit-remaining"), "4")
        const statuses: Array<number> = []
        for (let i = 0; i < 5; i++) {
          const r = yield* raw(`${base}/info/CVE-2021-44228`, { headers: { authorization: org.apiKey } })
          statuses.push(r.status)
          assert.strictEqual(r.headers.get("x-ratelimit-limit-minute"), "5")
          assert.strictEqual(r.headers.get("x-ratelimit-limit-week"), "1000")
          assert.isNotNull(r.headers.get("ratelimit-reset"))
          if (r.status === 429) {
            assert.deepStrictEqual(r.body, { success: false, error: "rate limit exceeded" })
            const retry = Number(r.headers.get("retry-after"))
            assert.isTrue(retry >= 1 && retry <= 60)
            assert.strictEqual(r.headers.get("ratelimit-remaining"), "0")
          }
        }
        assert.deepStrictEqual(statuses, [200, 200, 200, 200, 429])
        const week = yield* raw(`${base}/info/CVE-2021-44228`, { headers: { authorization: org.apiKey } })
        assert.strictEqual(week.headers.get("x-ratelimit-remaining-week"), "995")

        const sql = yield* SqlClient.SqlClient
        // The usage log writes off the response path: poll briefly for the batch.
        let rows: ReadonlyArray<{ route: string; status: number; org_uuid: string; identifier: string | null }> = []
        for (let i = 0; i < 50 && rows.length < 7; i++) {
          yield* Effect.sleep("50 millis")
          rows = yield* sql<{ route: string; status: number; org_uuid: string; identifier: string | null }>`
            SELECT route, status, org_uuid::text AS org_uuid, identifier FROM usage_log WHERE org_uuid = ${org.uuid}::uuid ORDER BY id`
        }
        assert.deepStrictEqual(rows.map((r) => [r.route, r.status]), [
          ["/v1/auth/token", 200],
          ["/v1/info/:identifier", 200],
          ["/v1/info/:identifier", 200],
          ["/v1/info/:identifier", 200],
          ["/v1/info/:identifier", 200],
          ["/v1/info/:identifier", 429],
          ["/v1/info/:identifier", 429]
        ])
        assert.strictEqual(rows[1]!.identifier, "CVE-2021-44228")
      })))

    it.effect("cache: invalidated when the store touches the identifier", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer
        const org = yield* newOrg()
        const client = yield* clientFor(base, org.uuid, org.secret, "apiKey")
        const store = (yield* VulnStore) as VulnStore["Service"] & {
          publishTouched: (ids: ReadonlyArray<string>) => Effect.Effect<boolean>
        }
        assert.isFalse((yield* client.vulns.info({ params: { identifier: "CVE-2021-44228" } })).cache_hit)
        assert.isTrue((yield* client.vulns.info({ params: { identifier: "CVE-2021-44228" } })).cache_hit)
        yield* store.publishTouched(["GHSA-jfh8-c2jp-5v3q"])
        yield* Effect.sleep("50 millis")
        assert.isFalse((yield* client.vulns.info({ params: { identifier: "CVE-2021-44228" } })).cache_hit)
      })))
  })
})
