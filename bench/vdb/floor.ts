// `npm run bench -- vdb --floor`: the least any HTTP server on this machine
// does for the same request, as a reference point between the bare fetch and
// the API: plain `node:http`, no framework, the same driver and pool size, and
// the two statements the API's guarantees need (the organization's row, read
// per request, and the record), no auth check, logging or encoding beyond
// writing the stored JSON out.
//   node bench/vdb/floor.ts <databaseUrl> <port> <orgUuid> <identifier> <pool>
import { createServer } from "node:http"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"

const [url, port, orgUuid, identifier, pool] = process.argv.slice(2) as [string, string, string, string, string]

await Effect.gen(function*() {
  const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: Number(pool) })
  const once = Effect.gen(function*() {
    yield* sql`SELECT secret_sealed, is_active, per_minute, per_week FROM organizations WHERE uuid = ${orgUuid}::uuid`
    const rows = yield* sql<{ record: string }>`SELECT record::text AS record FROM vuln_records WHERE identifier = ${identifier} LIMIT 1`
    return `[${rows.map((r) => r.record).join(",")}]`
  })
  yield* Effect.callback<void>(() => {
    createServer((_req, res) => {
      Effect.runPromise(once).then(
        (body) => res.writeHead(200, { "content-type": "application/json" }).end(body),
        () => res.writeHead(500).end()
      )
    }).listen(Number(port), "127.0.0.1", () => process.stdout.write("ready\n"))
  })
}).pipe(Effect.scoped, Effect.provide(Reactivity.layer), Effect.orDie, Effect.runPromise)
