import { Clock, Context, Effect, Layer } from "effect"

/**
 * Wrong passwords are throttled per account (lower-cased email) and per client
 * address: after 5 failures for one account, or 20 from one address, within a
 * 15-minute window, sign-in is refused for the rest of that window (429 with
 * `Retry-After`), whether or not the next password is right. A success clears
 * the account's count. Counts live in the process (a restart forgets them).
 */
export const ACCOUNT_FAILURES = 5
export const ADDRESS_FAILURES = 20
export const THROTTLE_WINDOW_MILLIS = 15 * 60 * 1000

interface Window {
  start: number
  failures: number
}

export class SignInThrottle extends Context.Service<SignInThrottle, {
  /** Seconds to wait when either key is over its limit; undefined when sign-in may be tried. */
  check(account: string, address: string): Effect.Effect<number | undefined>
  failed(account: string, address: string): Effect.Effect<void>
  succeeded(account: string): Effect.Effect<void>
}>()("vdb/members/SignInThrottle") {
  static readonly layerMemory = Layer.sync(SignInThrottle, () => {
    const windows = new Map<string, Window>()
    const current = (key: string, now: number): Window => {
      const w = windows.get(key)
      if (w !== undefined && now - w.start < THROTTLE_WINDOW_MILLIS) return w
      const fresh = { start: now, failures: 0 }
      windows.set(key, fresh)
      return fresh
    }
    const waitOf = (w: Window, limit: number, now: number) =>
      w.failures >= limit ? Math.max(1, Math.ceil((w.start + THROTTLE_WINDOW_MILLIS - now) / 1000)) : 0
    const sweep = (now: number) => {
      if (windows.size < 10_000) return
      for (const [key, w] of windows) if (now - w.start >= THROTTLE_WINDOW_MILLIS) windows.delete(key)
    }
    return SignInThrottle.of({
      check: (account, address) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const wait = Math.max(
            waitOf(current(`a:${account.trim().toLowerCase()}`, now), ACCOUNT_FAILURES, now),
            waitOf(current(`i:${address}`, now), ADDRESS_FAILURES, now)
          )
          return wait > 0 ? wait : undefined
        }),
      failed: (account, address) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          sweep(now)
          current(`a:${account.trim().toLowerCase()}`, now).failures++
          current(`i:${address}`, now).failures++
        }),
      succeeded: (account) => Effect.sync(() => void windows.delete(`a:${account.trim().toLowerCase()}`))
    })
  })
}
