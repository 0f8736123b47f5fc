import { Clock, Context, Effect, Layer } from "effect"

/**
 * The authorize call's limiter: 12 calls per 60-second window per client
 * address (the TCP peer address; `X-Forwarded-For` is not trusted, as the
 * site has no configured proxy). The window opens at an address's first call;
 * the 13th and later calls inside it are refused with the seconds until it
 * closes. Per process.
 */
export const AUTHORIZE_LIMIT = 12
export const AUTHORIZE_WINDOW_MILLIS = 60_000

export class AuthorizeLimiter extends Context.Service<AuthorizeLimiter, {
  /** undefined when admitted; otherwise the `Retry-After` seconds. */
  take(address: string): Effect.Effect<number | undefined>
}>()("vdb/device/AuthorizeLimiter") {
  static readonly layerMemory = Layer.sync(AuthorizeLimiter, () => {
    const windows = new Map<string, { start: number; calls: number }>()
    return AuthorizeLimiter.of({
      take: (address) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          let w = windows.get(address)
          if (w === undefined || now - w.start >= AUTHORIZE_WINDOW_MILLIS) {
            if (windows.size >= 10_000) {
              for (const [key, old] of windows) if (now - old.start >= AUTHORIZE_WINDOW_MILLIS) windows.delete(key)
            }
            w = { start: now, calls: 0 }
            windows.set(address, w)
          }
          if (w.calls >= AUTHORIZE_LIMIT) return Math.max(1, Math.ceil((w.start + AUTHORIZE_WINDOW_MILLIS - now) / 1000))
          w.calls++
          return undefined
        })
    })
  })
}
