import { Effect, Schema, Stream } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import { VulnStore } from "../vulns/VulnStore.ts"
import { ingest } from "./Ingest.ts"
import { IngestError } from "./IngestError.ts"
import { FailedNormalisation, IngestEvent, IngestRequest } from "./IngestEvents.ts"

/**
 * Ingestion on the admin socket: `IngestRun` streams progress and problems,
 * then a summary; `IngestFailed` lists items whose normalisation failed.
 * Running in the server keeps the `/info` cache invalidation in-process
 * (`VulnStore.touched`) and lets a PGlite database stay single-process.
 */
export class IngestRpcs extends RpcGroup.make(
  Rpc.make("IngestRun", { payload: IngestRequest, success: IngestEvent, error: IngestError, stream: true }),
  Rpc.make("IngestFailed", { success: Schema.Array(FailedNormalisation) })
) {}

export const IngestRpcHandlers = IngestRpcs.toLayer(Effect.gen(function*() {
  const store = yield* VulnStore
  return IngestRpcs.of({
    IngestRun: (request) => ingest(request).pipe(Stream.provideService(VulnStore, store)),
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
