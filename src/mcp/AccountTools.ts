import { Clock, Effect } from "effect"
import { Organizations } from "../orgs/Organizations.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { remaining } from "../ratelimit/Windows.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import { McpCaller } from "./McpCaller.ts"
import type { ToolNameIn, ToolParams } from "./ToolDefinitions.ts"
import { fail, result } from "./ToolKit.ts"
import type { ToolHandlers } from "./VulnLookups.ts"

const SINCE_FROM = Date.UTC(1970, 0, 1)
const SINCE_UNTIL = Date.UTC(10_000, 0, 1)

/** The caller's own account: organization, rate-limit windows, usage. */
export const accountToolHandlers = Effect.gen(function*() {
  const orgs = yield* Organizations
  const limiter = yield* RateLimiter
  const usage = yield* UsageLog

  const callerOrg = Effect.gen(function*() {
    const { orgUuid } = yield* McpCaller
    const org = yield* orgs.show(orgUuid).pipe(
      Effect.catch(() => fail("not_permitted", "the calling organization no longer exists"))
    )
    return org
  })

  const handlers: ToolHandlers<ToolNameIn<"account">> = {
    get_organization: Effect.fn("McpTools.get_organization")(function*() {
      const org = yield* callerOrg
      const data = {
        uuid: org.uuid,
        name: org.name,
        isActive: org.isActive,
        perMinute: org.perMinute,
        perWeek: org.perWeek
      }
      return result(
        `${org.name} (${org.isActive ? "active" : "inactive"}): ${org.perMinute || "unlimited"}/minute, ${
          org.perWeek || "unlimited"
        }/week`,
        data
      )
    }),

    get_rate_limit_status: Effect.fn("McpTools.get_rate_limit_status")(function*() {
      const org = yield* callerOrg
      const d = yield* limiter.peek(org.uuid, { perMinute: org.perMinute, perWeek: org.perWeek })
      const win = (w: typeof d.minute) => ({
        limit: w.limit,
        used: w.used,
        remaining: w.limit === 0 ? null : remaining(w),
        resetAt: new Date(w.resetAt).toISOString()
      })
      const data = { minute: win(d.minute), week: win(d.week) }
      const line = (name: string, w: typeof data.minute) =>
        w.limit === 0 ? `${name}: unlimited` : `${name}: ${w.remaining}/${w.limit} left, resets ${w.resetAt}`
      return result(`${line("minute", data.minute)}; ${line("week", data.week)}`, data)
    }),

    get_usage: Effect.fn("McpTools.get_usage")(function*(p: ToolParams<"get_usage">) {
      const { orgUuid } = yield* McpCaller
      const now = yield* Clock.currentTimeMillis
      const since = p.since === undefined || p.since === "" ? new Date(now - 7 * 86_400_000) : new Date(p.since)
      // JavaScript reads years PostgreSQL refuses (before 4713 BC): outside this range the query would fail.
      if (Number.isNaN(since.getTime()) || since.getTime() < SINCE_FROM || since.getTime() >= SINCE_UNTIL) {
        return yield* fail("invalid_argument", "since must be an ISO 8601 date or time in the years 1970 to 9999")
      }
      const summary = yield* usage.summary({ orgUuid, since })
      const rows = summary.rows.map((r) => ({ ...r }))
      return result(
        `${rows.reduce((n, r) => n + r.requests, 0)} request(s) since ${since.toISOString()}\n${
          rows.map((r) => `- ${r.route}: ${r.requests}`).join("\n")
        }`,
        { since: since.toISOString(), rows }
      )
    })
  }
  return handlers
})
