import { describe, expect, it } from "vitest"
import { rateLimitLine, waitText } from "../../src/cli/RateLimitHint.ts"

/** The CLI's line for a 429, from the headers the API sends with it (src/ratelimit/Windows.ts). */
describe("rate-limit line", () => {
  const org = "00000000-0000-4000-8000-000000000000"
  const now = Date.UTC(2026, 11, 2, 10, 0, 0)

  it("names the used-up window, the wait and its end, and the flag that raises that window", () => {
    expect(
      rateLimitLine({ retryAfter: 3 * 86_400 + 14 * 3600, exhausted: [{ window: "week", limit: 1000 }] }, org, now)
    ).toBe(
      "rate limit exceeded: the organization's 1,000 requests a week are used up; retry in 3 d 14 h (at 2026-12-06 00:00 UTC). " +
        `To raise the limit, the server's operator runs \`bin/vdb org limits ${org} --per-week N\` (0 = unlimited)`
    )
    const both = rateLimitLine(
      { retryAfter: 42, exhausted: [{ window: "minute", limit: 5 }, { window: "week", limit: 1000 }] },
      org,
      now
    )
    expect(both).toContain(
      "the organization's 5 requests a minute and 1,000 requests a week are used up; retry in 42 s. "
    )
    expect(both).toContain("--per-minute N --per-week N")
    expect(both.length).toBeLessThan(300)
  })

  it("without the limit headers (a proxy's 429) still says to retry and where limits are set", () => {
    expect(rateLimitLine(undefined, org, now)).toBe(
      `rate limit exceeded; retry later. To raise the limit, the server's operator runs \`bin/vdb org limits ${org} --per-minute N --per-week N\` (0 = unlimited)`
    )
  })

  it("waits read as a person would say them", () => {
    expect([1, 89, 90, 3000, 5400, 7260, 86_400 * 2, 86_400 * 6 + 3600].map(waitText))
      .toEqual(["1 s", "89 s", "2 min", "50 min", "1 h 30 min", "2 h 1 min", "2 d", "6 d 1 h"])
  })
})
