import type { Duration, Scope } from "effect"
import { Array as Arr, Cause, Effect, Queue, Semaphore } from "effect"
import { SqlError } from "effect/sql"

/**
 * An append-only log written off the request path: `offer` never waits, rows
 * go to a bounded in-process queue, and one background fiber writes them in
 * batches. A batch the database refuses is retried row by row, so one bad row
 * (or one bad request) never loses the others; rows that still fail, and rows
 * refused because the queue was full, are counted as dropped. Closing the
 * scope flushes what is queued.
 */
export interface BatchedWriter<A> {
  /** Enqueues a row; false (and counted as dropped) when the queue is full. */
  offer(row: A): boolean
  /** Writes everything queued so far, waiting for a batch being written (tests, shutdown). */
  readonly flush: Effect.Effect<void>
  /** Rows dropped by this process since start (queue full, or refused by the database). */
  readonly dropped: Effect.Effect<number>
}

export interface Options<A> {
  /** Names the log in warnings, e.g. "usage log". */
  readonly name: string
  readonly capacity: number
  readonly batchSize: number
  /**
   * After a batch that was not full, rows gather this long before the next one is taken:
   * under load a batch then holds tens to hundreds of rows, and a full batch is followed
   * at once, so throughput has no cap.
   */
  readonly linger: Duration.Input
  /** One statement for the whole batch; its parameter count must not grow with the batch (`unnest`). */
  readonly write: (rows: Arr.NonEmptyReadonlyArray<A>) => Effect.Effect<void, unknown>
  /** Persists a number of newly dropped rows (optional); on failure the count is kept for the next batch. */
  readonly recordDropped?: ((dropped: number) => Effect.Effect<void, unknown>) | undefined
}

/** What a failure says, short and without the rows: the innermost message (the database's own). */
const summary = (cause: Cause.Cause<unknown>) => {
  let error: unknown = Cause.squash(cause)
  for (let depth = 0; depth < 5 && error instanceof Error && error.cause !== undefined; depth++) error = error.cause
  return (error instanceof Error ? error.message : String(error)).slice(0, 200)
}

/** Failures that no row of the batch can avoid: the database is not there for anyone. */
const UNREACHABLE = new Set(["ConnectionError", "AuthenticationError", "AuthorizationError"])
const unreachable = (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause)
  return SqlError.isSqlError(error) && UNREACHABLE.has(error.reason._tag)
}

export const make = Effect.fnUntraced(
  function*<A>(options: Options<A>): Effect.fn.Return<BatchedWriter<A>, never, Scope.Scope> {
    const queue = yield* Queue.bounded<A>(options.capacity)
    let droppedSinceStart = 0
    let droppedUnrecorded = 0
    let queueFullUnreported = 0
    const drop = (count: number) => {
      droppedSinceStart += count
      droppedUnrecorded += count
    }

    const lock = yield* Semaphore.make(1)

    /** The number of rows that failed. */
    const writeOneByOne = Effect.fnUntraced(function*(rows: ReadonlyArray<A>) {
      let failed = 0
      for (let i = 0; i < rows.length; i++) {
        const exit = yield* Effect.exit(options.write([rows[i]!]))
        if (exit._tag === "Success") continue
        if (unreachable(exit.cause)) return failed + rows.length - i
        failed++
      }
      return failed
    })

    const writeRows = (rows: Arr.NonEmptyReadonlyArray<A>) =>
      options.write(rows).pipe(
        Effect.catchCause((cause) =>
          Effect.gen(function*() {
            // Row by row: only the rows the database refuses are lost. An unreachable database
            // refuses them all, so the rest of the batch is dropped at once instead of waiting
            // out a connection timeout per row (the writer is uninterruptible while it writes).
            const failed = rows.length === 1 ? 1 : yield* writeOneByOne(rows)
            drop(failed)
            yield* Effect.logWarning(`${options.name}: batch write failed; retried row by row`, {
              rows: rows.length,
              dropped: failed,
              reason: summary(cause)
            })
          })
        )
      )

    const recordDropped = Effect.suspend(() => {
      const recorder = options.recordDropped
      const count = droppedUnrecorded
      if (recorder === undefined || count === 0) return Effect.void
      droppedUnrecorded = 0
      return recorder(count).pipe(Effect.catchCause(() => Effect.sync(() => void (droppedUnrecorded += count))))
    })

    const reportQueueFull = Effect.suspend(() => {
      const count = queueFullUnreported
      queueFullUnreported = 0
      return count === 0
        ? Effect.void
        : Effect.logWarning(`${options.name}: queue full, rows dropped`, { dropped: count, droppedSinceStart })
    })

    const writeBatch = (rows: ReadonlyArray<A>) =>
      Effect.gen(function*() {
        yield* reportQueueFull
        for (const chunk of Arr.chunksOf(rows, options.batchSize)) yield* writeRows(chunk)
        yield* recordDropped
      }).pipe(
        // A lost log line must never take the service down.
        Effect.catchCause((cause) => Effect.logError(`${options.name}: write failed`, { reason: summary(cause) })),
        lock.withPermits(1)
      )

    // A batch taken is always written, even when the scope closes meanwhile.
    let full = false
    yield* Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        restore(
          full
            ? Queue.takeBetween(queue, 1, options.batchSize)
            : Effect.andThen(Effect.sleep(options.linger), Queue.takeBetween(queue, 1, options.batchSize))
        ),
        (rows) => {
          full = rows.length === options.batchSize
          return writeBatch(rows)
        }
      )
    ).pipe(Effect.forever, Effect.forkScoped)

    const flush = Effect.flatMap(Queue.clear(queue), writeBatch)
    yield* Effect.addFinalizer(() => flush)

    return {
      offer: (row) => {
        if (Queue.offerUnsafe(queue, row)) return true
        drop(1)
        queueFullUnreported++
        return false
      },
      flush,
      dropped: Effect.sync(() => droppedSinceStart)
    }
  }
)
