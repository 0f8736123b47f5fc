import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import type { SqlClient } from "effect/sql"
import { readFileSync } from "node:fs"
import { ingest } from "../../src/ingest/Ingest.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import type { SecretBox } from "../../src/secrets/SecretBox.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { clientFor, serveApi } from "../api/harness.ts"
import type { ManifestEntry } from "../ingest-store/manifestCheck.ts"
import { specSource } from "../ingest-store/manifestCheck.ts"
import { FIXTURES, ingestTree, records } from "../ingest/corpus.ts"
import { PostgresTest } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"

/**
 * End to end: the repository's copy of the data folder (test/fixtures/data)
 * ingested into a throwaway PostgreSQL database, the real API routes served
 * on a loopback port, and every identifier of manifest.json asked through the
 * typed client: `/info` sources and aliases, `/exploits` summary counts.
 * The mapping choices (vulnrichment → mitre, Exploit-DB counts, aliases from
 * CVE references) are documented in docs/sources.md, "Checking against manifest.json".
 */

const manifest: Record<string, ManifestEntry> = JSON.parse(readFileSync(`${FIXTURES}manifest.json`, "utf8")).ids

const Deps = Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)
type DepsOf = Organizations | VulnStore | SqlClient.SqlClient | SecretBox

const dataSources = (record: unknown): ReadonlyArray<string> => {
  const adp = (record as { containers?: { adp?: ReadonlyArray<{ x_dataSource?: string }> } }).containers?.adp ?? []
  return adp.flatMap((a) => a.x_dataSource === undefined ? [] : [a.x_dataSource])
}

const isCve = (id: string) => /^CVE-\d{4}-\d+$/.test(id)

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("manifest.json over HTTP (/v1/info, /v1/exploits) after ingesting test/fixtures/data", () => {
    it.effect(
      "every manifest identifier: sources, aliases and exploit summary counts",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const last = yield* ingest({ paths: [], all: FIXTURES }).pipe(Stream.runLast)
          assert.isTrue(last._tag === "Some" && last.value._tag === "Summary")
          if (last._tag === "Some" && last.value._tag === "Summary") assert.strictEqual(last.value.skipped, 0)

          const ctx = yield* Effect.context<DepsOf>()
          const base = yield* serveApi(Layer.succeedContext(ctx))
          const org = yield* Effect.flatMap(
            Organizations,
            (orgs) => orgs.create({ name: "manifest", perMinute: 0, perWeek: 0 })
          )
          const client = yield* clientFor(base, org.uuid, org.secret, "apiKey")

          const referenced = new Map<string, ReadonlyArray<string>>()
          for (const r of records(ingestTree(FIXTURES).outcomes)) {
            if (r.referencedAliases !== undefined) {
              referenced.set(r.identifier, [...(referenced.get(r.identifier) ?? []), ...r.referencedAliases])
            }
          }
          const problems: Array<string> = []
          const ids = Object.keys(manifest).sort()
          assert.isAtLeast(ids.length, 139)
          let infoChecked = 0
          for (const id of ids) {
            const entry = manifest[id]!
            if (isCve(id)) {
              const info = yield* client.vulns.info({ params: { identifier: id } })
              infoChecked++
              const sources = info.sources.map((s) => s.name as string)
              const expected = [...new Set(entry.sources.map(specSource))]
              const missing = expected.filter((s) => !sources.includes(s))
              if (missing.length > 0) {
                problems.push(`${id}: /info sources lack ${missing.join(",")} (have ${sources.join(",")})`)
              }
              const processing = info.sources.filter((s) => s.processing).map((s) => s.name)
              if (processing.length > 0) problems.push(`${id}: /info still processing ${processing.join(",")}`)
              const lost = entry.aliases.filter((a) => !info.aliases.includes(a))
              if (lost.length > 0) problems.push(`${id}: /info aliases lack ${lost.join(",")}`)
              // Exactly: the manifest's alias lists plus the GHSA advisories the CVE record references.
              const allowed = new Set([...entry.aliases, ...(referenced.get(id) ?? [])])
              const unexplained = info.aliases.filter((a) => !allowed.has(a))
              if (unexplained.length > 0) {
                problems.push(`${id}: /info aliases ${unexplained.join(",")} not in the manifest nor referenced`)
              }
              // A source beyond the manifest's must be one of an alias (e.g. a REJECTED duplicate's canonical CVE).
              const viaAliases = new Set(info.aliases.flatMap((a) => (manifest[a]?.sources ?? []).map(specSource)))
              const stray = sources.filter((s) => !expected.includes(s) && !viaAliases.has(s))
              if (stray.length > 0) {
                problems.push(`${id}: /info sources ${stray.join(",")} not explained by the manifest`)
              }
            } else {
              // /info takes CVE forms only (spec 1): any other identifier is in no source there.
              const refused = yield* client.vulns.info({ params: { identifier: id } }).pipe(Effect.flip)
              if (refused._tag !== "NotFound") problems.push(`${id}: /info answered ${refused._tag}, not NotFound`)
              // Their sources are checked on /vuln: the `x_dataSource` of each record's enrichment container.
              const found = yield* client.vulns.vuln({ params: { identifier: id } })
              const sources = found.flatMap((r) => dataSources(r))
              const missing = [...new Set(entry.sources.map(specSource))].filter((s) => !sources.includes(s))
              if (missing.length > 0) {
                problems.push(`${id}: /vuln sources lack ${missing.join(",")} (have ${sources.join(",")})`)
              }
            }
            const page = yield* client.vulns.exploits({ params: { identifier: id }, query: { limit: 1 } }).pipe(
              Effect.catchTag("NotFound", () => Effect.succeed(undefined))
            )
            if (page === undefined) {
              problems.push(`${id}: /exploits answered 404`)
              continue
            }
            const x = entry.exploits
            const s = page.summary
            if (x === undefined) {
              if (page.count !== 0 && isCve(id)) problems.push(`${id}: ${page.count} exploits, manifest lists none`)
              continue
            }
            if (s.metasploit !== x.metasploit) problems.push(`${id}: metasploit ${s.metasploit} ≠ ${x.metasploit}`)
            if (s.nuclei !== x.nuclei) problems.push(`${id}: nuclei ${s.nuclei} ≠ ${x.nuclei}`)
            if ((s.github > 0) !== x.pocInGithub) {
              problems.push(`${id}: github ${s.github}, manifest pocInGithub ${x.pocInGithub}`)
            }
            const low = Math.max(x.exploitDb, x.exploitDbRowsInSubset)
            const high = x.exploitDb + x.exploitDbRowsInSubset
            if (s.exploitDb < low || s.exploitDb > high) {
              problems.push(`${id}: exploitDb ${s.exploitDb} outside [${low}, ${high}]`)
            }
            const total = Object.values(s).reduce((n, v) => n + v, 0)
            if (total !== page.count) problems.push(`${id}: summary adds up to ${total}, count ${page.count}`)
          }
          assert.deepStrictEqual(problems, [])
          assert.strictEqual(infoChecked, ids.filter(isCve).length)
        })),
      { timeout: 60_000 }
    )
  })
})
