import { Effect, Queue, Stream } from "effect"
import { releaseMemory } from "../runtime/ReleaseMemory.ts"
import { VulnStore } from "../vulns/VulnStore.ts"
import { CHUNK_BYTES, FileUnreadable } from "./FileBytes.ts"
import { ingestFiles } from "./Ingest.ts"
import { IngestError, InvalidRequest } from "./IngestError.ts"
import { type IngestChunk, IngestReady } from "./IngestEvents.ts"
import { IngestRpcs } from "./IngestRpcs.ts"

/** Chunks a run's inbox holds before a sender waits (one more is being parsed). */
export const INBOX_CHUNKS = 2

const invalid = (reason: string) => new IngestError({ reason: new InvalidRequest({ reason }) })

export const IngestRpcHandlers = IngestRpcs.toLayer(Effect.gen(function*() {
  const store = yield* VulnStore
  // Open runs by the client's id: where their chunks go.
  const runs = new Map<string, Queue.Queue<IngestChunk>>()

  /** File `index`'s bytes, as the run's chunks bring them. */
  const fileOf = (inbox: Queue.Queue<IngestChunk>) => (index: number): Stream.Stream<Uint8Array, FileUnreadable> =>
    Stream.fromEffectRepeat(Queue.take(inbox)).pipe(
      Stream.takeUntil((chunk) => chunk.last),
      Stream.mapEffect((chunk) =>
        chunk.file !== index
          ? Effect.fail(new FileUnreadable({ reason: `chunk of file ${chunk.file} while reading file ${index}` }))
          : chunk.error !== undefined
          ? Effect.fail(new FileUnreadable({ reason: chunk.error }))
          : Effect.succeed(chunk.bytes)
      )
    )

  return IngestRpcs.of({
    IngestBegin: (request) =>
      Stream.unwrap(Effect.gen(function*() {
        if (runs.has(request.run)) return Stream.fail(invalid("this ingest run has already begun"))
        const inbox = yield* Queue.bounded<IngestChunk>(INBOX_CHUNKS)
        runs.set(request.run, inbox)
        const events = ingestFiles({ files: request.files, ignored: request.ignored }, fileOf(inbox))
        return Stream.concat(Stream.make(new IngestReady({ run: request.run })), events).pipe(
          Stream.provideService(VulnStore, store),
          Stream.ensuring(Effect.gen(function*() {
            runs.delete(request.run)
            yield* Queue.shutdown(inbox)
            // The last run to end gives the memory the ingest grew back (V8 keeps it otherwise).
            if (runs.size === 0) yield* releaseMemory
          }))
        )
      })),
    IngestChunk: (chunk) =>
      Effect.gen(function*() {
        const inbox = runs.get(chunk.run)
        if (inbox === undefined) return yield* invalid("no such ingest run (it ended, or the server restarted)")
        if (chunk.bytes.length > CHUNK_BYTES) return yield* invalid(`a chunk holds at most ${CHUNK_BYTES} bytes`)
        // Waits while the inbox is full: this is the backpressure the client feels.
        yield* Queue.offer(inbox, chunk)
      }),
    IngestFailed: () =>
      Effect.map(store.failed(), (rows) =>
        rows.map((f) => ({
          source: f.source,
          identifier: f.identifier,
          position: f.position,
          reason: f.reason,
          ...(f.failedAt === undefined ? {} : { failedAt: f.failedAt.toISOString() })
        })))
  })
}))
