/**
 * Ingests a data folder (default test/fixtures/data) into the database at
 * DATABASE_URL with the real readers, printing one JSON event per line.
 * Run as a child process by the crash test (which SIGKILLs it mid-run).
 *   DATABASE_URL=postgres://… node test/ingest-store/ingestData.ts [DIR] [BATCH] [IN_FLIGHT]
 */
import { NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Redacted, Stream } from "effect"
import { fileURLToPath } from "node:url"
import { layerPostgres } from "../../src/db/Database.ts"
import { MigrationsLayer } from "../../src/db/Migrations.ts"
import { ingest } from "../../src/ingest/Ingest.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"

const DATA = fileURLToPath(new URL("../fixtures/data", import.meta.url))

const program = Effect.gen(function*() {
  const dir = process.argv[2] ?? DATA
  const batchSize = Number(process.argv[3] ?? 500)
  const inFlight = Number(process.argv[4] ?? 2)
  yield* ingest({ paths: [], all: dir }, { batchSize, inFlight }).pipe(
    Stream.runForEach((event) => Effect.sync(() => process.stdout.write(`${JSON.stringify(event)}\n`)))
  )
})

const Database = Layer.unwrap(Effect.map(Config.String("DATABASE_URL"), (url) => layerPostgres(Redacted.make(url), 2)))

program.pipe(
  Effect.provide(VulnStore.layer.pipe(Layer.provideMerge(Layer.provideMerge(MigrationsLayer, Database)))),
  NodeRuntime.runMain
)
