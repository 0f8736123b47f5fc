import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Option, Stream } from "effect"
import type { RpcClient, RpcGroup } from "effect/rpc"
import { RpcTest } from "effect/rpc"
import { CHUNK_BYTES } from "../../src/ingest/FileBytes.ts"
import type { IngestEvent } from "../../src/ingest/IngestEvents.ts"
import { INBOX_CHUNKS, IngestRpcHandlers } from "../../src/ingest/IngestRpcHandlers.ts"
import { IngestRpcs } from "../../src/ingest/IngestRpcs.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"

const osvLine = (n: number) =>
  JSON.stringify({ id: `GO-2024-${String(n).padStart(6, "0")}`, modified: "2024-01-01T00:00:00Z" })
/** 1,000 fresh items (about 58 KB, under `CHUNK_BYTES`): half a batch each. */
const chunkOf = (k: number) =>
  Buffer.from(`${Array.from({ length: 1000 }, (_, n) => osvLine(k * 1000 + n)).join("\n")}\n`)

/** Opens a run on the in-process admin RPCs and collects its events in the background. */
const begin = (client: RpcClient.RpcClient<RpcGroup.Rpcs<typeof IngestRpcs>>, run: string, display: string) =>
  Effect.gen(function*() {
    const ready = yield* Deferred.make<void>()
    const done = yield* Deferred.make<ReadonlyArray<IngestEvent>>()
    const events: Array<IngestEvent> = []
    yield* client.IngestBegin({ run, files: [{ source: "osv", display }], ignored: [] }).pipe(
      Stream.runForEach((e) =>
        e._tag === "Ready" ? Deferred.succeed(ready, undefined) : Effect.sync(() => void events.push(e))
      ),
      Effect.andThen(Deferred.succeed(done, events)),
      Effect.forkScoped
    )
    yield* Deferred.await(ready)
    return done
  })

describe("ingest over the admin RPCs: the client sends bytes, the server acknowledges as it can take them", () => {
  it.live(
    "a database that does not keep up stops the acknowledgements: the server holds a few chunks, not the file",
    () =>
      Effect.scoped(
        Effect.gen(function*() {
          const client = yield* RpcTest.makeClient(IngestRpcs)
          yield* begin(client, "slow", "feed.ndjson")
          assert.isAtMost(chunkOf(39).length, CHUNK_BYTES)
          let acknowledged = 0
          for (let k = 0; k < 40; k++) {
            const ack = yield* client.IngestChunk({ run: "slow", file: 0, bytes: chunkOf(k), last: false }).pipe(
              Effect.timeoutOption("1 second")
            )
            if (Option.isNone(ack)) break
            acknowledged++
          }
          // Three batches being written and one waiting (the pipeline's depth, two chunks each), the inbox, and no more.
          assert.isAtLeast(acknowledged, 3 * 2)
          assert.isAtMost(acknowledged, 4 * 2 + INBOX_CHUNKS + 1)
        }).pipe(
          Effect.provide(IngestRpcHandlers.pipe(Layer.provide(Layer.mock(VulnStore, { putRaw: () => Effect.never }))))
        )
      ),
    30_000
  )

  it.live(
    "the server reads only the bytes it is sent: a display name is a name, not a path it opens",
    () =>
      Effect.scoped(
        Effect.gen(function*() {
          const client = yield* RpcTest.makeClient(IngestRpcs)
          const done = yield* begin(client, "names", "/etc/passwd")
          yield* client.IngestChunk({
            run: "names",
            file: 0,
            bytes: Buffer.from(`${osvLine(1)}\n{oops\n`),
            last: false
          })
          yield* client.IngestChunk({ run: "names", file: 0, bytes: new Uint8Array(0), last: true })
          const events = yield* Deferred.await(done)
          const summary = events.at(-1)!
          assert.strictEqual(summary._tag, "Summary")
          assert.deepStrictEqual(summary._tag === "Summary" && [summary.items, summary.inserted, summary.skipped], [
            2,
            1,
            1
          ])
          assert.deepStrictEqual(events.flatMap((e) => e._tag === "Problem" ? [e.position] : []), ["/etc/passwd:2"])
          const store = yield* VulnStore
          assert.deepStrictEqual((yield* store.lookup("GO-2024-000001")).records.map((r) => r.identifier), [
            "GO-2024-000001"
          ])

          const late = yield* Effect.flip(
            client.IngestChunk({ run: "names", file: 0, bytes: new Uint8Array(1), last: true })
          )
          assert.match(late.message, /no such ingest run/)
        }).pipe(Effect.provide(IngestRpcHandlers.pipe(Layer.provideMerge(VulnStore.layerMemory))))
      ),
    30_000
  )

  it.live(
    "a chunk larger than the CLI ever sends is refused, and the run goes on",
    () =>
      Effect.scoped(
        Effect.gen(function*() {
          const client = yield* RpcTest.makeClient(IngestRpcs)
          const done = yield* begin(client, "big", "big.ndjson")
          const refused = yield* Effect.flip(
            client.IngestChunk({ run: "big", file: 0, bytes: new Uint8Array(CHUNK_BYTES + 1), last: false })
          )
          assert.include(refused.message, `a chunk holds at most ${CHUNK_BYTES} bytes`)
          yield* client.IngestChunk({ run: "big", file: 0, bytes: Buffer.from(`${osvLine(7)}\n`), last: false })
          yield* client.IngestChunk({ run: "big", file: 0, bytes: new Uint8Array(0), last: true })
          const summary = (yield* Deferred.await(done)).at(-1)!
          assert.deepStrictEqual(summary._tag === "Summary" && [summary.items, summary.inserted], [1, 1])
        }).pipe(Effect.provide(IngestRpcHandlers.pipe(Layer.provideMerge(VulnStore.layerMemory))))
      ),
    30_000
  )
})
