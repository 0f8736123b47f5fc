import { Cause, Deferred, Effect, Stream } from "effect"
import type { RpcClient, RpcClientError, RpcGroup } from "effect/rpc"
import { randomUUID } from "node:crypto"
import { fileBytes } from "./FileBytes.ts"
import { type IngestError, IngestInterrupted } from "./IngestError.ts"
import type { IngestEvent } from "./IngestEvents.ts"
import type { IngestRpcs } from "./IngestRpcs.ts"
import type { Plan } from "./SourceFiles.ts"

type Client = RpcClient.RpcClient<RpcGroup.Rpcs<typeof IngestRpcs>, RpcClientError.RpcClientError>

const EMPTY = new Uint8Array(0)

/**
 * Runs a planned ingest through the admin RPCs (the server's, or the same
 * handlers in this process): opens the run, and once the server is `Ready`
 * sends each file's bytes chunk by chunk, waiting for each acknowledgement
 * before reading the next chunk, so one chunk is in flight at a time and the
 * CLI's memory holds a few chunks whatever the file. The run's events come
 * back while the bytes go out.
 */
export const uploadRun = (
  client: Client,
  plan: Plan
): Stream.Stream<IngestEvent, IngestError | IngestInterrupted | RpcClientError.RpcClientError> =>
  Stream.unwrap(Effect.gen(function*() {
    const run = randomUUID()
    const ready = yield* Deferred.make<void>()
    const send = Effect.gen(function*() {
      yield* Deferred.await(ready)
      for (const [file, source] of plan.files.entries()) {
        // A file the CLI could not read to its end is one problem on the server's side; the run goes on.
        const error = yield* fileBytes(source).pipe(
          Stream.runForEach((bytes) => client.IngestChunk({ run, file, bytes, last: false })),
          Effect.as<string | undefined>(undefined),
          Effect.catchTag("FileUnreadable", (e) => Effect.succeed(e.message))
        )
        yield* client.IngestChunk({ run, file, bytes: EMPTY, last: true, ...(error === undefined ? {} : { error }) })
      }
    })
    const events = client.IngestBegin({
      run,
      files: plan.files.map(({ display, format, source }) => ({
        source,
        display,
        ...(format === undefined ? {} : { format })
      })),
      ignored: plan.ignored
    }).pipe(
      Stream.tap((event) => event._tag === "Ready" ? Deferred.succeed(ready, undefined) : Effect.void),
      Stream.filter((event): event is IngestEvent => event._tag !== "Ready"),
      // A server shutting down interrupts the run on its side: for the CLI that is the server stopping.
      Stream.catchCause((
        cause
      ): Stream.Stream<never, IngestError | IngestInterrupted | RpcClientError.RpcClientError> =>
        Cause.hasInterruptsOnly(cause) ? Stream.fail(new IngestInterrupted()) : Stream.failCause(cause)
      )
    )
    return Stream.merge(events, Stream.fromEffectDrain(send))
  }))
