import type { Scope } from "effect"
import { Array as Arr, Cause, Clock, Duration, Effect, Queue, Semaphore } from "effect"
import { SqlError } from "effect/sql"

/**
 * An append-only log written off the request path: `offer` never waits, rows
 * go to a bounded in-process queue, and one background fiber writes them in
 * batches. A batch the database refuses is retried row by row, so one bad row
 * (or one bad request) never loses the others; rows that still fail, and rows
 * refused because the queue was full, are counted as dropped. Closing the
 * scope flushes what is queued.
 *
 * When the database cannot be reached at all, the rows are held in memory
 * (up to `holdRows`, for up to `holdFor`) and retried with a backoff from
 * 100 ms to 2 s, so a short outage or a restart of PostgreSQL loses nothing;
 * rows past either bound, and rows still held when the scope closes, are
 * counted as dropped.
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
  /** Rows held while the database is unreachable; more are dropped (default: `capacity`). */
  readonly holdRows?: number | undefined
  /** How long the oldest held row waits for the database before all held rows are dropped (default 60 s). */
  readonly holdFor?: Duration.Input | undefined
}

const RETRY_FIRST_MS = 100
const RETRY_MAX_MS = 2000

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

    const holdRows = options.holdRows ?? options.capacity
    const holdForMs = Duration.toMillis(Duration.fromInputUnsafe(options.holdFor ?? "60 seconds"))
    /** Rows written while the database could not be reached, oldest first, and when the oldest was. */
    let held: Array<A> = []
    let heldSince = 0
    /** The wait before the next retry of held rows (0: nothing held). */
    let retryMs = 0

    /** Rows that failed, and the rows not tried because the database became unreachable. */
    const writeOneByOne = Effect.fnUntraced(function*(rows: ReadonlyArray<A>) {
      let failed = 0
      for (let i = 0; i < rows.length; i++) {
        const exit = yield* Effect.exit(options.write([rows[i]!]))
        if (exit._tag === "Success") continue
        if (unreachable(exit.cause)) return { failed, unwritten: rows.slice(i) }
        failed++
      }
      return { failed, unwritten: [] }
    })

    /** Writes rows; answers those not written because the database is unreachable (to hold). */
    const writeRows = (rows: Arr.NonEmptyReadonlyArray<A>): Effect.Effect<ReadonlyArray<A>> =>
      options.write(rows).pipe(
        Effect.as([]),
        Effect.catchCause((cause) =>
          Effect.gen(function*() {
            // An unreachable database refuses every row: hold them all at once instead of
            // waiting out a connection timeout per row (the writer is uninterruptible while it writes).
            if (unreachable(cause)) return rows
            // Row by row: only the rows the database refuses are lost.
            const { failed, unwritten } = rows.length === 1 ? { failed: 1, unwritten: [] } : yield* writeOneByOne(rows)
            drop(failed)
            yield* Effect.logWarning(`${options.name}: batch write failed; retried row by row`, {
              rows: rows.length,
              dropped: failed,
              reason: summary(cause)
            })
            return unwritten
          })
        )
      )

    /** Holds rows for the next retry, within `holdRows`; the rest are dropped. */
    const hold = (rows: ReadonlyArray<A>, since: number) =>
      Effect.suspend(() => {
        const kept = Math.max(0, Math.min(rows.length, holdRows - held.length))
        if (held.length === 0) heldSince = since
        for (let i = 0; i < kept; i++) held.push(rows[i]!)
        retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_FIRST_MS, retryMs * 2))
        if (kept === rows.length) return Effect.void
        drop(rows.length - kept)
        return Effect.logWarning(`${options.name}: database unreachable, rows held for retry; more dropped`, {
          held: held.length,
          dropped: rows.length - kept,
          droppedSinceStart
        })
      })

    /** Drops held rows whose wait is over (`holdFor`), or all of them (the scope closing). */
    const dropHeld = (now: number | undefined) =>
      Effect.suspend(() => {
        if (held.length === 0 || (now !== undefined && now - heldSince < holdForMs)) return Effect.void
        const count = held.length
        held = []
        retryMs = 0
        drop(count)
        return Effect.logWarning(`${options.name}: database unreachable; held rows dropped`, {
          dropped: count,
          droppedSinceStart
        })
      })

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
        const now = yield* Clock.currentTimeMillis
        yield* dropHeld(now)
        const since = held.length === 0 ? now : heldSince
        const pending = held.length === 0 ? rows : [...held, ...rows]
        held = []
        const unwritten: Array<A> = []
        for (const chunk of Arr.chunksOf(pending, options.batchSize)) {
          // Once the database is found unreachable, the rest waits for the next retry untried.
          if (unwritten.length > 0) unwritten.push(...chunk)
          else unwritten.push(...(yield* writeRows(chunk)))
        }
        if (unwritten.length > 0) yield* hold(unwritten, since)
        else retryMs = 0
        yield* recordDropped
      }).pipe(
        // A lost log line must never take the service down.
        Effect.catchCause((cause) => Effect.logError(`${options.name}: write failed`, { reason: summary(cause) })),
        lock.withPermits(1)
      )

    // A batch taken is always written, even when the scope closes meanwhile. While rows are
    // held, each retry takes whatever has queued since, so the queue keeps taking rows.
    let full = false
    yield* Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        restore(
          retryMs > 0
            ? Effect.andThen(Effect.sleep(retryMs), Queue.clear(queue))
            : full
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
    // What the database still cannot take at the end is counted, not lost silently.
    yield* Effect.addFinalizer(() =>
      Effect.andThen(flush, Effect.andThen(dropHeld(undefined), recordDropped).pipe(lock.withPermits(1)))
    )

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
