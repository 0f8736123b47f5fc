// The configurations `npm run bench -- vdb` measures beside its main one (ApiKey,
// limits 0): what each needs from the running server, and the corpus for the
// cold-cache pass.
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { signTokenRequest } from "../../src/auth/SigV4Token.ts"
import type { LoadStats } from "./load.ts"

/** A 15-minute token for `Authorization: Bearer`, signed in like the CLI's `--jwt`. */
export const bearerFor = async (port: number, orgUuid: string, secret: string) => {
  const signed = signTokenRequest({ orgUuid, secret, path: "/v1/auth/token", now: Date.now() })
  const response = await fetch(`http://127.0.0.1:${port}/v1/auth/token`, {
    headers: { authorization: signed.authorization, "x-amz-date": signed.amzDate }
  })
  if (response.status !== 200) throw new Error(`sign-in failed: ${response.status}`)
  return `Bearer ${((await response.json()) as { token: string }).token}`
}

/** What one request answers (status and the headers a configuration depends on). */
const probe = async (port: number, path: string, headers: Record<string, string>) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers })
  await response.arrayBuffer()
  return {
    status: response.status,
    etag: response.headers.get("etag"),
    encoding: response.headers.get("content-encoding")
  }
}

/** `bin/vdb ingest --all test/fixtures/data` into the running server (its admin socket is in the data directory). */
const ingestCorpus = (root: string, env: Record<string, string>) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [
      "--disable-warning=ExperimentalWarning",
      join(root, "src/cli/main.ts"),
      "ingest",
      "--all",
      join(root, "test/fixtures/data"),
      "--json"
    ], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
      stdio: ["ignore", "ignore", "inherit"]
    })
    child.once("exit", (code) => code === 0 ? resolve() : reject(new Error(`ingest exited with ${code}`)))
  })

/** `/v1/vuln/<id>` for every identifier the corpus stored a record or an alias under, one per line, into `file`. */
const writeCorpusPaths = (databaseUrl: string, file: string) =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* PgClient.make({ url: Redacted.make(databaseUrl), maxConnections: 1 })
    const rows = yield* sql<{ identifier: string }>`
      SELECT identifier FROM vuln_records UNION SELECT identifier FROM vuln_aliases UNION SELECT alias FROM vuln_aliases
      ORDER BY identifier`
    writeFileSync(file, rows.map((r) => `/v1/vuln/${encodeURIComponent(r.identifier)}`).join("\n") + "\n")
    return rows.length
  })).pipe(Effect.provide(Reactivity.layer), Effect.orDie, Effect.runPromise)

const ownCpu = (s: LoadStats) => s.cpuMsPer1000.load + s.cpuMsPer1000.server + s.cpuMsPer1000.postgres
const middle = (values: ReadonlyArray<number>) =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!
const median = (rounds: ReadonlyArray<LoadStats>) =>
  [...rounds].sort((a, b) => a.rps - b.rps)[Math.floor((rounds.length - 1) / 2)]!
const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000

/**
 * The same request as the main configuration with one change each, every one
 * against the run's bare fetch: limits set but never reached, a JWT,
 * `Accept-Encoding: gzip`, and a 304 for `If-None-Match`.
 */
export const otherConfigurations = async (options: {
  readonly port: number
  readonly path: string
  readonly keys: { readonly apiKey: string; readonly limitedKey: string; readonly bearer: string }
  readonly neverReached: number
  readonly rounds: number
  readonly bare: ReadonlyArray<LoadStats>
  /** `[authorization, headersJson, expectedStatus]` → one round. */
  readonly measure: (params: ReadonlyArray<string | number>) => Promise<LoadStats>
}) => {
  const { apiKey, bearer, limitedKey } = options.keys
  const etag = (await probe(options.port, options.path, { authorization: apiKey })).etag ?? ""
  const gzipped = await probe(options.port, options.path, { authorization: apiKey, "accept-encoding": "gzip" })
  if (gzipped.encoding !== "gzip") throw new Error(`gzip not negotiated: ${gzipped.encoding}`)
  const configurations = [
    {
      name: "limitsNeverReached",
      what:
        `ApiKey, limits ${options.neverReached}/min and /week: one atomic counter statement for each group of waiting requests`,
      authorization: limitedKey,
      headers: {},
      status: 200
    },
    { name: "jwt", what: "Bearer JWT, limits 0", authorization: bearer, headers: {}, status: 200 },
    {
      name: "gzip",
      what: "Accept-Encoding: gzip (the cached compressed bytes)",
      authorization: apiKey,
      headers: { "accept-encoding": "gzip" },
      status: 200
    },
    {
      name: "notModified",
      what: "If-None-Match: the current ETag (304, no body)",
      authorization: apiKey,
      headers: { "if-none-match": etag },
      status: 304
    }
  ]
  const bare = median(options.bare)
  const bareCpu = middle(options.bare.map(ownCpu))
  const results: Record<string, unknown> = {}
  for (const c of configurations) {
    const rounds: Array<LoadStats> = []
    for (let round = 0; round < options.rounds; round++) {
      rounds.push(await options.measure([c.authorization, JSON.stringify(c.headers), c.status]))
    }
    const stats = median(rounds)
    results[c.name] = {
      what: c.what,
      rps: stats.rps,
      p50: stats.p50,
      p99: stats.p99,
      cpuMsPer1000: stats.cpuMsPer1000,
      ratio: ratio(stats.rps, bare.rps),
      cpuRatio: ratio(bareCpu, ownCpu(stats)),
      p99VsBare: Math.round((stats.p99 / bare.p99) * 100) / 100,
      rounds: rounds.map((s) => s.rps)
    }
  }
  return results
}

/**
 * Cold cache: every identifier the fixture corpus stores a record or alias under,
 * once each, right after ingesting it (the ingest evicted whatever it
 * touched); then the same list again, warm.
 */
export const coldPass = async (options: {
  readonly root: string
  readonly env: Record<string, string>
  readonly databaseUrl: string
  readonly pathsFile: string
  readonly measure: (pathsFile: string) => Promise<LoadStats>
}) => {
  await ingestCorpus(options.root, options.env)
  const identifiers = await writeCorpusPaths(options.databaseUrl, options.pathsFile)
  const summary = (s: LoadStats) => ({
    requests: s.requests,
    rps: s.rps,
    p50: s.p50,
    p99: s.p99,
    cpuMsPer1000: s.cpuMsPer1000
  })
  const cold = await options.measure(options.pathsFile)
  const warm = await options.measure(options.pathsFile)
  return {
    what:
      "GET /v1/vuln/{id} for every identifier with a record or alias in test/fixtures/data, once each, just after ingesting it; then the list again (warm)",
    identifiers,
    cold: summary(cold),
    warm: summary(warm)
  }
}
