/** Seconds a client is asked to wait (`Retry-After`) while the database cannot be reached. */
export const DATABASE_RETRY_AFTER_SECONDS = 5

/** What every surface says, in its own dialect, while the database cannot be reached. Nothing of the cause. */
export const DATABASE_UNAVAILABLE =
  "the service is temporarily unavailable (its database cannot be reached); try again shortly"

/** SQLSTATEs of a server that is going away or not there yet: class 08 (connection) and 57P0x (shutdown, starting). */
const UNAVAILABLE_STATES = /^(08\d{3}|57P0[1-3]|53300)$/

/** Node's codes for a connection that could not be made or was lost. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN"
])

/** node-postgres's own words for a lost or never-made connection (it sets no code on them). */
const DRIVER_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/

/**
 * Whether a failure means the database cannot be reached now (refused, lost, shutting down or
 * starting), not that a statement was wrong: such a request is answered 503 with `Retry-After`, in
 * the surface's dialect, instead of 500. It walks an `effect/sql` `SqlError` (its `reason`, a
 * `ConnectionError` for a refused connection) and `cause` chains.
 */
export const isDatabaseUnavailable = (u: unknown): boolean => {
  let e: unknown = u
  for (let depth = 0; typeof e === "object" && e !== null && depth < 8; depth++) {
    const value = e as { _tag?: unknown; code?: unknown; message?: unknown; reason?: unknown; cause?: unknown }
    if (value._tag === "ConnectionError") return true
    if (typeof value.code === "string" && (UNAVAILABLE_STATES.test(value.code) || UNREACHABLE.has(value.code))) {
      return true
    }
    if (typeof value.message === "string" && DRIVER_MESSAGES.test(value.message)) return true
    if (typeof value.reason === "object" && value.reason !== null && isDatabaseUnavailable(value.reason)) return true
    e = value.cause
  }
  return false
}
