// `npm run bench -- vdb --floor`: the least any HTTP server on this machine
// does for the same request, as a reference point between the bare fetch and
// the API: plain `node:http`, no framework, the same driver and pool size.
//   node bench/vdb/floor.ts <databaseUrl> <port> <orgUuid> <identifier> <pool> [cached|statements]
// - `cached` (default; what the API's guarantees need since the caches of issue 13): the
//   organization and the answer are read once; per request the ApiKey header is parsed and its
//   digest compared in constant time, and the stored bytes are written. No logging.
// - `statements` (the floor before those caches): the two statements per request, the
//   organization's row and the record, no auth check, logging or encoding.
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"

const [url, port, orgUuid, identifier, pool, mode] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string | undefined
]
const API_KEY = /^ApiKey ([0-9a-fA-F-]{36}):([0-9a-f]{64})$/

await Effect.gen(function*() {
  const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: Number(pool) })
  const org =
    sql`SELECT secret_sealed, is_active, per_minute, per_week FROM organizations WHERE uuid = ${orgUuid}::uuid`
  const record = sql<
    { record: string }
  >`SELECT record::text AS record FROM vuln_records WHERE identifier = ${identifier} LIMIT 1`
  const once = Effect.gen(function*() {
    yield* org
    return `[${(yield* record).map((r) => r.record).join(",")}]`
  })
  let handle: (authorization: string | undefined) => Promise<string | Buffer | undefined> = (_) =>
    Effect.runPromise(once)
  if (mode !== "statements") {
    yield* org
    const body = Buffer.from(`[${(yield* record).map((r) => r.record).join(",")}]`)
    const known = new Map<string, Buffer>()
    // The floor does not know the secret: the first digest it sees for the organization is "expected".
    handle = async (authorization) => {
      const key = API_KEY.exec((authorization ?? "").trim())
      if (key === null) return undefined
      const presented = Buffer.from(key[2]!, "latin1")
      let expected = known.get(key[1]!)
      if (expected === undefined) known.set(key[1]!, expected = presented)
      return presented.length === expected.length && timingSafeEqual(presented, expected) ? body : undefined
    }
  }
  yield* Effect.callback<void>(() => {
    createServer((req, res) => {
      handle(req.headers.authorization).then(
        (body) =>
          body === undefined
            ? res.writeHead(401).end()
            : res.writeHead(200, { "content-type": "application/json" }).end(body),
        () => res.writeHead(500).end()
      )
    }).listen(Number(port), "127.0.0.1", () => process.stdout.write("ready\n"))
  })
}).pipe(Effect.scoped, Effect.provide(Reactivity.layer), Effect.orDie, Effect.runPromise)
