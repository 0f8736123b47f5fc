import { PgClient, PgConnection } from "@effect/sql-pg"
import { Cause, Deferred, Effect, Exit, Metric, Queue, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import {
  INVALIDATION_CHANNELS,
  type InvalidationBus,
  type InvalidationChannel,
  makeLocalBus
} from "./InvalidationBus.ts"

/** The single PostgreSQL channel; the payload names the bus channel and key. */
export const NOTIFY_CHANNEL = "vdb_invalidation"

const CHANNELS: ReadonlySet<string> = new Set(INVALIDATION_CHANNELS)

/** The listening sessions of every process on the database carry this name, so a publisher can count them. */
const LISTENER_NAME = "vdb-invalidation"

/**
 * How long a publish waits for the other processes to say they have evicted. A process that is
 * stopped or cut off does not hold writes up for longer; its caches fall back to their TTL, and a
 * lost session is answered with `All` once it is back.
 */
const ACK_TIMEOUT = "2 seconds"

/** The listening session's reconnect delays: the first after a loss, and the most while it fails. */
const RECONNECT_FIRST_MS = 200
const RECONNECT_MAX_MS = 10_000

/**
 * The wait before the next attempt to listen, after the one that waited `previous` (undefined: the
 * first) ended; `listened` when that attempt had been listening (a loss, not a failed connect).
 */
export const reconnectDelay = (previous: number | undefined, listened: boolean): number =>
  previous === undefined || listened ? RECONNECT_FIRST_MS : Math.min(previous * 2, RECONNECT_MAX_MS)

/** From NOTIFY to the last other process's acknowledgement (docs/operations.md). */
const roundTrip = Metric.histogram("vdb_invalidation_round_trip_seconds", {
  description: "Time from publishing a cache invalidation to every other process confirming it evicted",
  boundaries: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2]
})
const lostOf = (reason: string) =>
  Metric.counter("vdb_invalidation_lost_total", {
    description: "Invalidations other processes may have missed, by reason; their caches fall back to the TTL",
    incremental: true,
    attributes: { reason }
  })
const unconfirmed = lostOf("unconfirmed")
const notSent = lostOf("not_sent")
const sessionLost = lostOf("session_lost")

interface Awaiting {
  /** The listening sessions (backend process ids) yet to acknowledge. */
  readonly pending: Set<number>
  readonly done: Deferred.Deferred<void>
}

export const makePostgresBus: Effect.Effect<InvalidationBus, never, PgClient.PgClient | Scope.Scope> = Effect.gen(
  function*() {
    const pg = yield* PgClient.PgClient
    const local = makeLocalBus()
    // Our own notifications come back through LISTEN; they were delivered locally already.
    const origin = randomBytes(6).toString("hex")
    const listening = yield* Deferred.make<void>()
    const scope = yield* Effect.scope
    // The backend process id of this process's listening session (0 while there is none).
    let listenerPid = 0
    let sequence = 0
    const awaiting = new Map<number, Awaiting>()

    // Sessions that let a publish time out (a stopped process): later publishes still tell them but do
    // not wait for them, until they acknowledge something again. Otherwise every write would wait the
    // whole timeout for as long as the process stays stopped.
    const unresponsive = new Set<number>()

    const acknowledged = (sequenceText: string, pid: number) => {
      unresponsive.delete(pid)
      const waiting = awaiting.get(Number(sequenceText))
      if (waiting === undefined) return
      waiting.pending.delete(pid)
      if (waiting.pending.size === 0) Deferred.doneUnsafe(waiting.done, Exit.void)
    }

    // Payloads: `<origin>\t<sequence>\t<channel>\t<key>` for a change, `ack\t<origin>\t<sequence>\t<pid>`
    // for a process's word that it has evicted (sent through the pool: the listening session is
    // pinned to its LISTEN, so it names itself by its process id). The key is everything after the
    // third TAB: an identifier may hold one (an alias as an advisory wrote it), and `split` with a
    // limit dropped the rest of the message, every identifier after it included.
    const received = (payload: string) => {
      const fields = fieldsOf(payload)
      if (fields[0] === "ack") {
        const [, to, number, pid] = fields
        if (to === origin && number !== undefined && pid !== undefined) acknowledged(number, Number(pid))
        return Effect.void
      }
      const [from, sequenceText, channel, key] = fields
      if (
        from === origin || sequenceText === undefined || channel === undefined || key === undefined ||
        !CHANNELS.has(channel)
      ) {
        return Effect.void
      }
      const pid = listenerPid
      return Effect.andThen(
        local.deliver(channel as InvalidationChannel, { _tag: "Key", key }),
        // Off the listening loop, so the next notification is not held up by this round trip.
        pg.notify(NOTIFY_CHANNEL, `ack\t${from}\t${sequenceText}\t${pid}`).pipe(
          Effect.ignore,
          Effect.forkIn(scope),
          Effect.asVoid
        )
      )
    }

    // Only losing a session that listened is worth a warning: a failed (re)connect
    // attempt is the database being down, which whoever uses it next reports.
    let listened = false
    const lostSession = (cause: Cause.Cause<unknown>) => {
      const lost = listened
      listened = false
      const log = lost
        ? Effect.andThen(
          Metric.update(sessionLost, 1),
          Effect.logWarning(
            "invalidation listener lost its database session; caches read the database until it is back"
          )
        )
        : Effect.logDebug("invalidation listener cannot reach the database yet")
      return log.pipe(
        Effect.annotateLogs("failure", failureMessage(cause)),
        // Start-up waits for the first attempt only, successful or not.
        Effect.andThen(Deferred.succeed(listening, undefined)),
        Effect.as(lost)
      )
    }
    const session = Effect.scoped(
      Effect.gen(function*() {
        const connection = yield* PgConnection.make({ ...pg.config, applicationName: LISTENER_NAME })
        const notifications = yield* connection.listen(NOTIFY_CHANNEL)
        listenerPid = connection.processId
        // Whatever changed while no session listened is unknown: every cache starts over.
        yield* local.deliverAll
        listened = true
        yield* Deferred.succeed(listening, undefined)
        while (true) yield* received((yield* Queue.take(notifications)).payload)
      }).pipe(Effect.ensuring(Effect.sync(() => {
        listenerPid = 0
      })))
    )

    // Reconnects after 200 ms, doubling up to 10 s while the database stays out of reach, and from
    // 200 ms again once a session has listened: one schedule for the process's life made each loss
    // wait longer than the last (10 s from the seventh on), and while a process has no session
    // nobody waits for it and its caches may serve old answers.
    yield* Effect.gen(function*() {
      let delay: number | undefined
      while (true) {
        const lost = yield* session.pipe(
          Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : lostSession(cause))
        )
        delay = reconnectDelay(delay, lost)
        yield* Effect.sleep(delay)
      }
    }).pipe(Effect.forkScoped)
    // Start-up waits (briefly) for LISTEN, so nothing published after the server is up is missed.
    yield* Deferred.await(listening).pipe(Effect.timeout("5 seconds"), Effect.ignore)

    /** The other processes' listening sessions on this database, as PostgreSQL sees them now. */
    const otherListeners = () =>
      pg<{ readonly pid: number }>`SELECT pid FROM pg_stat_activity
      WHERE application_name = ${LISTENER_NAME} AND datname = current_database() AND pid <> ${listenerPid}`

    /**
     * Tells the other processes and waits until each has evicted (or `ACK_TIMEOUT`): a change is
     * in force on every process when the write that made it returns, so an admin command's answer
     * is never followed by a request another process answers from its cache. NOTIFY alone reached
     * them a few milliseconds later, when each read its session (an attack saw 1 to 4 stale
     * answers on the other process in the milliseconds after the answer).
     */
    const tell = (channel: InvalidationChannel, key: string) =>
      Effect.gen(function*() {
        const number = ++sequence
        const notify = pg.notify(NOTIFY_CHANNEL, `${origin}\t${number}\t${channel}\t${key}`)
        // Acknowledgements arrive on this process's own session: without one, none can be heard.
        if (listenerPid === 0) return yield* notify
        const others = (yield* otherListeners()).map((row) => Number(row.pid))
        const live = new Set(others)
        for (const pid of unresponsive) if (!live.has(pid)) unresponsive.delete(pid)
        const pending = new Set(others.filter((pid) => !unresponsive.has(pid)))
        if (pending.size === 0) return yield* notify
        const waiting: Awaiting = { pending, done: Deferred.makeUnsafe<void>() }
        awaiting.set(number, waiting)
        yield* Effect.gen(function*() {
          const started = performance.now()
          yield* notify
          const answered = yield* Deferred.await(waiting.done).pipe(Effect.timeoutOption(ACK_TIMEOUT))
          if (answered._tag === "Some") yield* Metric.update(roundTrip, (performance.now() - started) / 1000)
          else {
            yield* Metric.update(unconfirmed, 1)
            for (const pid of waiting.pending) unresponsive.add(pid)
            yield* Effect.logWarning(
              "invalidation: a process did not confirm in time; until it does, its caches are bounded by their TTL"
            ).pipe(
              Effect.annotateLogs({ channel, processes: waiting.pending.size })
            )
          }
        }).pipe(Effect.ensuring(Effect.sync(() => awaiting.delete(number))))
      })

    const bus: InvalidationBus = {
      live: () => listened,
      publish: (channel, key) =>
        Effect.andThen(
          local.deliver(channel, { _tag: "Key", key }),
          tell(channel, key).pipe(
            Effect.catchCause((cause) =>
              Effect.andThen(
                Metric.update(notSent, 1),
                Effect.logWarning("invalidation not sent; other processes fall back to their cache TTL").pipe(
                  Effect.annotateLogs({ channel, failure: failureMessage(cause) })
                )
              )
            )
          )
        ),
      subscribe: local.bus.subscribe
    }
    return bus
  }
)

/** The first three TAB-separated fields of a payload and everything after them. */
const fieldsOf = (payload: string): ReadonlyArray<string> => {
  const fields: Array<string> = []
  let start = 0
  for (let n = 0; n < 3; n++) {
    const tab = payload.indexOf("\t", start)
    if (tab === -1) break
    fields.push(payload.slice(start, tab))
    start = tab + 1
  }
  fields.push(payload.slice(start))
  return fields
}

const failureMessage = (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : String(error)
}
