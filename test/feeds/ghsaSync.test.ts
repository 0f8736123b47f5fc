import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { syncSources } from "../../src/feeds/FeedSync.ts"
import { advisoryToOsv } from "../../src/feeds/GhsaAdvisory.ts"
import { normalise } from "../../src/ingest/formats/index.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { jsonFiles } from "../support/mirror/api.ts"
import { osvToRest } from "../support/mirror/ghsa.ts"
import { apiFeedsApp, FAST, onMirror } from "./apiFeeds.ts"

const TOKEN = "ghp_secretTokenValue0123456789"
const PATH = "/ghsa/advisories"

describe.each(SqlBackends)("ghsa: GitHub's global advisories REST API on the mirror ($name)", ({ layer: database }) => {
  layer(apiFeedsApp(database), { excludeTestServices: true })((it) => {
    it.effect(
      "first sync pages by Link with the token; then only what changed; a bad advisory fails alone",
      () =>
        onMirror((mirror) =>
          Effect.gen(function*() {
            const store = yield* VulnStore
            const cursors = yield* FeedCursors
            const logged: Array<string> = []
            const logger = Logger.make(({ message }) => void logged.push(JSON.stringify(message)))
            const [first] = yield* syncSources(["ghsa"], FAST).pipe(Effect.provide(Logger.layer([logger])))
            assert.deepStrictEqual(
              [first!.status, first!.changed, first!.failed],
              ["updated", 5, 0],
              JSON.stringify(first)
            )
            const pages = mirror.api.log.filter((r) => r.path === PATH)
            assert.strictEqual(pages.length, 3, "5 advisories at 2 a page, following rel=next")
            assert.ok(pages.every((r) =>
              r.authorization === `Bearer ${TOKEN}` && r.apiVersion === "2022-11-28" &&
              r.accept === "application/vnd.github+json"
            ))
            assert.ok(
              pages.every((r) =>
                r.query.get("sort") === "updated" && r.query.get("direction") === "asc" && !r.query.has("modified")
              )
            )
            assert.ok(pages.slice(1).every((r) => r.query.has("after")))
            const state = (yield* cursors.get("ghsa"))!
            assert.ok(state.cursor.watermark !== undefined && state.lastUrl === mirror.url(PATH))
            assert.strictEqual(
              Date.parse(state.cursor.watermark!),
              Math.max(...mirror.api.ghsa.advisories.map((a) => Date.parse(String(a.updated_at))))
            )
            // Log4Shell's advisory is stored as the database's OSV is, linked to its CVE.
            const log4shell = yield* store.lookup("CVE-2021-44228", { bodies: false })
            assert.ok(log4shell.records.some((r) => r.source === "ghsa" && r.identifier === "GHSA-jfh8-c2jp-5v3q"))
            // The token is sent, and shown nowhere: not in the outcome, the cursor row or the logs.
            assert.ok(
              ![JSON.stringify(first), JSON.stringify(state), ...logged].some((s) => s.includes(TOKEN))
            )

            // Nothing changed: one request from the watermark, nothing stored.
            mirror.api.log.length = 0
            const [second] = yield* syncSources(["ghsa"], FAST)
            assert.deepStrictEqual([second!.status, second!.changed], ["unchanged", 0])
            assert.ok(mirror.api.log.every((r) => r.query.get("modified")?.startsWith(">=") === true))

            // GitHub updates one advisory and publishes a malformed one: one changes, one fails, the rest is untouched.
            const [a0] = mirror.api.ghsa.advisories
            mirror.api.ghsa.advisories[0] = { ...a0, summary: "updated upstream", updated_at: "2026-11-30T10:00:00Z" }
            mirror.api.ghsa.advisories.push({ ...a0, ghsa_id: undefined, updated_at: "2026-11-30T11:00:00Z" })
            mirror.api.log.length = 0
            const [third] = yield* syncSources(["ghsa"], FAST)
            assert.deepStrictEqual(
              [third!.status, third!.changed, third!.failed],
              ["updated", 1, 1],
              JSON.stringify(third)
            )
            assert.strictEqual((yield* cursors.get("ghsa"))!.cursor.watermark, "2026-11-30T11:00:00.000Z")
          }), { VDB_GITHUB_TOKEN: TOKEN }),
      { timeout: 60_000 }
    )
  })
})

// The faults test requests and the cursor, the same code on either database: PostgreSQL only.
describe("ghsa: GitHub's global advisories REST API on the mirror, faults (postgresql)", () => {
  layer(apiFeedsApp(), { excludeTestServices: true })((it) => {
    it.effect(
      "429 Retry-After past the run, 403 until x-ratelimit-reset, a plain 403, a foreign Link, a run cut after a page",
      () =>
        onMirror((mirror) =>
          Effect.gen(function*() {
            const cursors = yield* FeedCursors
            const full = { ...FAST, full: true }
            const before = (yield* cursors.get("ghsa"))?.cursor.watermark
            mirror.api.fault(PATH, { status: 429, headers: { "retry-after": "3600" }, times: 1 })
            const [limited] = yield* syncSources(["ghsa"], full)
            assert.deepStrictEqual([limited!.status, limited!.error?.kind], ["failed", "RateLimited"])
            assert.ok(limited!.nextRunAt.getTime() >= Date.now() + 3500_000, "the next run is when GitHub said")
            assert.strictEqual((yield* cursors.get("ghsa"))?.cursor.watermark, before, "the cursor stays")

            // The primary limit spent: GitHub answers 403 with remaining 0 and the reset time; the run waits and goes on.
            const reset = Math.ceil(Date.now() / 1000) + 1
            mirror.api.fault(PATH, {
              status: 403,
              headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) },
              times: 1
            })
            mirror.api.log.length = 0
            const [waited] = yield* syncSources(["ghsa"], full)
            assert.notStrictEqual(waited!.status, "failed", JSON.stringify(waited))
            assert.deepStrictEqual(mirror.api.log.map((r) => r.status), [403, 200, 200, 200])
            assert.ok(Date.now() >= reset * 1000 - 50, "waited for x-ratelimit-reset")

            // A 403 that is no rate limit (no headers saying so) is a refusal, not retried.
            mirror.api.fault(PATH, { status: 403, times: 1 })
            mirror.api.log.length = 0
            const [forbidden] = yield* syncSources(["ghsa"], full)
            assert.deepStrictEqual([forbidden!.status, forbidden!.error?.kind, mirror.api.log.length], [
              "failed",
              "HttpStatus",
              1
            ])

            // A Link to another origin (here the same mirror as localhost) is not followed: the token would go with it.
            mirror.api.ghsa.linkOrigin = mirror.url("/").replace("127.0.0.1", "localhost")
            mirror.api.log.length = 0
            const [foreign] = yield* syncSources(["ghsa"], full)
            assert.deepStrictEqual([foreign!.status, foreign!.error?.kind, mirror.api.log.length], [
              "failed",
              "InsecureRedirect",
              1
            ])
            mirror.api.ghsa.linkOrigin = undefined

            // A run cut after its first page (GitHub failing on the second): the watermark covers that page only,
            // and the next run resumes from it.
            const updated = mirror.api.ghsa.advisories.map((a) => Date.parse(String(a.updated_at))).sort((a, b) =>
              a - b
            )
            mirror.api.fault(PATH, { status: 502, times: 2, after: 1 })
            const [cut] = yield* syncSources(["ghsa"], full)
            assert.deepStrictEqual([cut!.status, cut!.error?.kind], ["failed", "HttpStatus"])
            assert.strictEqual(Date.parse((yield* cursors.get("ghsa"))!.cursor.watermark!), updated[1])
            mirror.api.log.length = 0
            const [resumed] = yield* syncSources(["ghsa"], FAST)
            assert.notStrictEqual(resumed!.status, "failed")
            assert.strictEqual(Date.parse(mirror.api.log[0]!.query.get("modified")!.slice(2)), updated[1])
            assert.strictEqual(Date.parse((yield* cursors.get("ghsa"))!.cursor.watermark!), updated.at(-1))
          }), { VDB_GITHUB_TOKEN: TOKEN }),
      { timeout: 30_000 }
    )
  })
})

describe("ghsa: the REST advisory converted to OSV normalises as the database's own OSV file", () => {
  for (const osv of jsonFiles("data/sources/ghsa")) {
    const id = String(osv.id)
    const record = (doc: unknown) => {
      const out = normalise({ source: "ghsa", identifier: id, raw: JSON.stringify(doc), position: id, parsed: doc })
      assert.ok(Array.isArray(out) && out[0]?.kind === "record", JSON.stringify(out))
      const r = out[0] as { record: { containers: { cna: Record<string, unknown> } }; aliases: unknown }
      const { affected, references, problemTypes, metrics, title } = r.record.containers.cna
      return {
        aliases: r.aliases,
        affected,
        problemTypes,
        metrics,
        title,
        references: (references as Array<{ url: string }>).map((x) => x.url)
      }
    }
    it(id, () => assert.deepStrictEqual(record(advisoryToOsv(osvToRest(osv))), record(osv)))
  }
})
