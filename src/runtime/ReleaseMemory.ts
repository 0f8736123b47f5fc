import { Effect } from "effect"
import { Session } from "node:inspector"

/**
 * Gives the memory a burst of work grew back to the system. After an ingest,
 * V8 keeps its young generation at the size the burst grew it to (32 MiB
 * with `bin/vdb`'s semi-space) and the burst's dead buffers until a major
 * collection happens to run: measured embedded, RSS stayed 11 % over idle a
 * minute after ingesting the fixture corpus, and within 5 % of it 10 s after
 * this (docs/gateway.md, "Memory"). Nothing a server can call without
 * `--expose-gc` asks V8 for that, except the inspector protocol:
 * `HeapProfiler.collectGarbage` is V8's low-memory notification (full
 * collections that also shrink the young generation). The session is
 * in-process: it opens no port and nothing outside can reach it. It blocks
 * the event loop for a few tens of milliseconds, so it runs once a burst
 * ends (an ingest run), never per request.
 */
export const releaseMemory: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const session = new Session()
  try {
    session.connect()
  } catch {
    // A Node built without the inspector: memory then settles on V8's own schedule.
    return resume(Effect.void)
  }
  session.post("HeapProfiler.collectGarbage", () => {
    // Not from inside the callback: the heap profiler's agent is still locked there, and
    // disconnecting would wait on that lock forever (seen: the whole process hung).
    setImmediate(() => session.disconnect())
    resume(Effect.void)
  })
})
