import { Effect, Random } from "effect"
import { readFileSync } from "node:fs"

/** Longest wait between two tries of one source, whatever the streak: one hour. */
export const MAX_BACKOFF_MS = 60 * 60 * 1000
const BASE_MS = 1000

/**
 * The wait before try `failures + 1`: doubling from one second, capped at an
 * hour, with jitter (between half and all of it) so processes and sources that
 * failed together do not come back together.
 */
export const backoffMs = (failures: number, base = BASE_MS) =>
  Effect.map(Random.next, (r) => {
    const full = Math.min(MAX_BACKOFF_MS, base * 2 ** Math.min(failures, 32))
    return Math.round(full / 2 + (full / 2) * r)
  })

/** `Retry-After` as epoch milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export const retryAfterAt = (header: string | undefined, now: number): number | undefined => {
  if (header === undefined) return undefined
  const value = header.trim()
  if (/^\d{1,10}$/.test(value)) return now + Number(value) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(now, date)
}

const version = (() => {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version?: unknown
    }
    return typeof pkg.version === "string" ? pkg.version : "0"
  } catch {
    return "0"
  }
})()

/** What every feed request says it is: publishers ask for a name they can contact about. */
export const USER_AGENT = `vdb/${version} (vulnerability-data mirror; feed sync)`
