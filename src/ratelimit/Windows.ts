/**
 * The two rate-limit windows. The minute is the UTC clock minute. The week is
 * the ISO week: it starts Monday 00:00:00 UTC and ends the next Monday 00:00 UTC.
 */
export type WindowKind = "minute" | "week"

const MINUTE = 60_000
const DAY = 86_400_000
const WEEK = 7 * DAY

export const minuteStart = (now: number): number => Math.floor(now / MINUTE) * MINUTE

export const weekStart = (now: number): number => {
  const day = Math.floor(now / DAY) * DAY
  // 1970-01-01 was a Thursday: (weekday + 6) % 7 is the number of days since Monday.
  const sinceMonday = (new Date(day).getUTCDay() + 6) % 7
  return day - sinceMonday * DAY
}

export const windowEnd = (kind: WindowKind, start: number): number => start + (kind === "minute" ? MINUTE : WEEK)

export interface WindowState {
  readonly kind: WindowKind
  /** 0 = unlimited. */
  readonly limit: number
  /** Requests admitted in the current window (this one included when admitted). */
  readonly used: number
  /** Epoch milliseconds when the window resets. */
  readonly resetAt: number
}

export interface RateDecision {
  readonly admitted: boolean
  readonly minute: WindowState
  readonly week: WindowState
  /** Epoch milliseconds of the decision. */
  readonly now: number
}

export const remaining = (w: WindowState): number => Math.max(0, w.limit - w.used)

/** Seconds until the refusing window(s) reset: the `Retry-After` of a 429. */
export const retryAfterSeconds = (d: RateDecision): number => {
  let until = d.now
  for (const w of [d.minute, d.week]) {
    if (w.limit > 0 && w.used >= w.limit) until = Math.max(until, w.resetAt)
  }
  return Math.max(1, Math.ceil((until - d.now) / 1000))
}

const resetSeconds = (w: WindowState, now: number) => Math.max(0, Math.ceil((w.resetAt - now) / 1000))

/**
 * Response headers: per-window `X-RateLimit-{Limit,Remaining,Reset}-{Minute,Week}`
 * (Limit 0 = unlimited, then no Remaining/Reset), and `RateLimit-{Limit,Remaining,Reset}`
 * for the tighter limited window (fewest remaining; on a tie the one that resets first).
 */
export const rateLimitHeaders = (d: RateDecision): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const [w, suffix] of [[d.minute, "Minute"], [d.week, "Week"]] as const) {
    headers[`x-ratelimit-limit-${suffix.toLowerCase()}`] = String(w.limit)
    if (w.limit > 0) {
      headers[`x-ratelimit-remaining-${suffix.toLowerCase()}`] = String(remaining(w))
      headers[`x-ratelimit-reset-${suffix.toLowerCase()}`] = String(resetSeconds(w, d.now))
    }
  }
  const limited = [d.minute, d.week].filter((w) => w.limit > 0)
  if (limited.length > 0) {
    const tighter = limited.reduce((a, b) =>
      remaining(b) < remaining(a) || (remaining(b) === remaining(a) && b.resetAt < a.resetAt) ? b : a
    )
    headers["ratelimit-limit"] = String(tighter.limit)
    headers["ratelimit-remaining"] = String(remaining(tighter))
    headers["ratelimit-reset"] = String(resetSeconds(tighter, d.now))
  }
  if (!d.admitted) headers["retry-after"] = String(retryAfterSeconds(d))
  return headers
}
