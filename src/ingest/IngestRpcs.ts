import { Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import { IngestError } from "./IngestError.ts"
import { FailedNormalisation, IngestBegin, IngestChunk, IngestRunEvent } from "./IngestEvents.ts"

/**
 * Ingestion on the admin socket. The server never opens a path a client
 * names: the CLI reads its files itself and sends their bytes.
 *
 * - `IngestBegin` opens a run (the files' sources and display names; the run
 *   id is the client's) and streams `Ready`, then progress and problems, then
 *   a summary.
 * - `IngestChunk` carries the next bytes of the current file. Its answer (the
 *   acknowledgement) comes once the run's inbox has room, and the CLI sends
 *   the next chunk only then: the server holds at most `INBOX_CHUNKS` chunks
 *   per run, and a slow database slows the CLI down instead of filling memory.
 * - `IngestFailed` lists items whose normalisation failed.
 *
 * Running in the server keeps the `/info` cache invalidation in-process
 * (`VulnStore.touched`) and lets a PGlite database stay single-process.
 */
export class IngestRpcs extends RpcGroup.make(
  Rpc.make("IngestBegin", { payload: IngestBegin, success: IngestRunEvent, error: IngestError, stream: true }),
  Rpc.make("IngestChunk", { payload: IngestChunk, error: IngestError }),
  Rpc.make("IngestFailed", { success: Schema.Array(FailedNormalisation) })
) {}
