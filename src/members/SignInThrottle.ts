import { Clock, Context, Effect, Layer } from "effect"
import { makeFailureWindows, waitOf as waitIn } from "../db/FailureWindows.ts"

/**
 * Wrong passwords are throttled per account (lower-cased email) and per client
 * address: after 5 failures for one account, or 20 from one address, within a
 * 15-minute window, sign-in is refused for the rest of that window (429 with
 * `Retry-After`), whether or not the next password is right. A success clears
 * the account's count. `layer` keeps the counts in the database, so every process behind a proxy
 * counts the same failures; `layerMemory` keeps them in the process (tests).
 */
export const ACCOUNT_FAILURES = 5
export const ADDRESS_FAILURES = 20
export const THROTTLE_WINDOW_MILLIS = 15 * 60 * 1000
/**
 * Windows kept at most. Only a wrong password makes one (one scrypt verification each), and an
 * address may make 20 a window, so reaching this takes thousands of addresses; past it the
 * oldest windows go first, and memory stays bounded whatever arrives.
 */
export const MAX_WINDOWS = 100_000
/** No member's email is longer (RFC 5321 limits a path to 256 octets); a longer one is keyed by its start. */
const MAX_ACCOUNT_KEY = 320

const accountKey = (account: string) => `a:${account.trim().toLowerCase().slice(0, MAX_ACCOUNT_KEY)}`

interface Window {
  start: number
  failures: number
}

export class SignInThrottle extends Context.Service<SignInThrottle, {
  /** Seconds to wait when either key is over its limit; undefined when sign-in may be tried. */
  check(account: string, address: string): Effect.Effect<number | undefined>
  failed(account: string, address: string): Effect.Effect<void>
  succeeded(account: string): Effect.Effect<void>
  /** Windows held (tests: what a request leaves behind). */
  readonly size: Effect.Effect<number>
}>()("vdb/members/SignInThrottle") {
  static readonly layerMemory = Layer.sync(SignInThrottle, () => {
    const windows = new Map<string, Window>()
    const live = (key: string, now: number): Window | undefined => {
      const w = windows.get(key)
      return w !== undefined && now - w.start < THROTTLE_WINDOW_MILLIS ? w : undefined
    }
    const current = (key: string, now: number): Window => {
      const w = live(key, now)
      if (w !== undefined) return w
      const fresh = { start: now, failures: 0 }
      windows.delete(key)
      windows.set(key, fresh)
      return fresh
    }
    const waitOf = (w: Window | undefined, limit: number, now: number) =>
      w !== undefined && w.failures >= limit
        ? Math.max(1, Math.ceil((w.start + THROTTLE_WINDOW_MILLIS - now) / 1000))
        : 0
    // A sweep reads every window, so it runs only when the map has grown by half since the last one
    // (amortised constant work a failure), and at the cap it makes room for a tenth more.
    let sweepAt = 10_000
    const sweep = (now: number) => {
      if (windows.size < sweepAt) return
      for (const [key, w] of windows) if (now - w.start >= THROTTLE_WINDOW_MILLIS) windows.delete(key)
      // Insertion order is age order (an expired window is re-inserted when renewed), so these are the oldest.
      const keep = MAX_WINDOWS - MAX_WINDOWS / 10
      if (windows.size >= MAX_WINDOWS) {
        for (const key of windows.keys()) {
          if (windows.size <= keep) break
          windows.delete(key)
        }
      }
      sweepAt = Math.min(MAX_WINDOWS, Math.max(10_000, Math.ceil(windows.size * 1.5)))
    }
    return SignInThrottle.of({
      // Reads only: a refused or unknown sign-in must not leave anything behind (each distinct email
      // used to add a window, and a throttled address could grow the map without limit).
      check: (account, address) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const wait = Math.max(
            waitOf(live(accountKey(account), now), ACCOUNT_FAILURES, now),
            waitOf(live(`i:${address}`, now), ADDRESS_FAILURES, now)
          )
          return wait > 0 ? wait : undefined
        }),
      failed: (account, address) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          sweep(now)
          current(accountKey(account), now).failures++
          current(`i:${address}`, now).failures++
        }),
      succeeded: (account) => Effect.sync(() => void windows.delete(accountKey(account))),
      size: Effect.sync(() => windows.size)
    })
  })

  static readonly layer = Layer.effect(
    SignInThrottle,
    Effect.gen(function*() {
      const windows = yield* makeFailureWindows(THROTTLE_WINDOW_MILLIS, ADDRESS_FAILURES)
      return SignInThrottle.of({
        // Reads only, as in memory: a refused or unknown sign-in leaves nothing behind.
        check: (account, address) =>
          Effect.map(windows.open([accountKey(account), `i:${address}`]), ({ now, windows: open }) => {
            const wait = Math.max(
              waitIn(open.get(accountKey(account)), ACCOUNT_FAILURES, THROTTLE_WINDOW_MILLIS, now),
              waitIn(open.get(`i:${address}`), ADDRESS_FAILURES, THROTTLE_WINDOW_MILLIS, now)
            )
            return wait > 0 ? wait : undefined
          }),
        failed: (account, address) => windows.failed([accountKey(account), `i:${address}`]),
        succeeded: (account) => windows.clear(accountKey(account)),
        size: windows.size(["a:", "i:"])
      })
    })
  )
}
