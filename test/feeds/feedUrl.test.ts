import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { backoffMs, MAX_BACKOFF_MS, retryAfterAt } from "../../src/feeds/Backoff.ts"
import { shownUrl } from "../../src/feeds/FeedError.ts"
import { checkRedirect, checkUrl, overrideVariable } from "../../src/feeds/FeedUrl.ts"

const refusalKind = <A>(effect: Effect.Effect<A, { readonly kind: string }>) =>
  Effect.map(
    Effect.exit(effect),
    (exit) =>
      Exit.isFailure(exit) ? Exit.findErrorOption(exit).pipe((o) => o._tag === "Some" ? o.value.kind : "defect") : "ok"
  )

describe("feed URLs", () => {
  it.effect("https anywhere, http only to a loopback address", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* refusalKind(checkUrl("https://www.cisa.gov/x.json")), "ok")
      for (const u of ["http://127.0.0.1:9/x", "http://localhost/x", "http://[::1]:8080/x", "http://127.8.0.1/x"]) {
        assert.strictEqual(yield* refusalKind(checkUrl(u)), "ok", u)
      }
      for (
        const u of [
          "http://www.cisa.gov/x.json",
          "http://10.0.0.1/x",
          "ftp://127.0.0.1/x",
          "file:///etc/passwd",
          "not a url",
          "http://127.0.0.1.evil.example/x"
        ]
      ) {
        assert.notStrictEqual(yield* refusalKind(checkUrl(u)), "ok", u)
      }
    }))

  it.effect("redirects only to https; a loopback http mirror may redirect within its own host", () =>
    Effect.gen(function*() {
      const https = new URL("https://epss.empiricalsecurity.com/epss_scores-current.csv.gz")
      assert.strictEqual(yield* refusalKind(checkRedirect(https, "/epss_scores-2026-12-01.csv.gz")), "ok")
      assert.strictEqual(
        yield* refusalKind(checkRedirect(https, "http://epss.empiricalsecurity.com/x")),
        "InsecureRedirect"
      )
      assert.strictEqual(yield* refusalKind(checkRedirect(https, "http://127.0.0.1/x")), "InsecureRedirect")
      const mirror = new URL("http://127.0.0.1:8080/kev.json")
      assert.strictEqual(yield* refusalKind(checkRedirect(mirror, "/other.json")), "ok")
      assert.strictEqual(yield* refusalKind(checkRedirect(mirror, "http://example.com/kev.json")), "InsecureRedirect")
      assert.strictEqual(yield* refusalKind(checkRedirect(mirror, "https://example.com/kev.json")), "ok")
    }))

  it("override variables and shown URLs", () => {
    assert.strictEqual(overrideVariable("cisa-kev"), "VDB_FEED_CISA_KEV_URL")
    assert.strictEqual(overrideVariable("nist-nvd"), "VDB_FEED_NIST_NVD_URL")
    // A key in the query or user information never reaches a status line.
    assert.strictEqual(shownUrl("https://user:secret@example.com/a/b?apiKey=secret#f"), "https://example.com/a/b")
  })
})

describe("backoff and Retry-After", () => {
  it("Retry-After as seconds or an HTTP date", () => {
    const now = Date.parse("2026-12-02T00:00:00Z")
    assert.strictEqual(retryAfterAt("120", now), now + 120_000)
    assert.strictEqual(retryAfterAt("Wed, 02 Dec 2026 00:10:00 GMT", now), now + 600_000)
    assert.strictEqual(retryAfterAt("Tue, 01 Dec 2026 00:10:00 GMT", now), now, "a date in the past is now")
    assert.strictEqual(retryAfterAt("soon", now), undefined)
    assert.strictEqual(retryAfterAt(undefined, now), undefined)
  })

  it.effect("doubles from a second, with jitter, never past an hour", () =>
    Effect.gen(function*() {
      for (let failures = 0; failures < 40; failures++) {
        const wait = yield* backoffMs(failures)
        const full = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** failures)
        assert.ok(wait >= full / 2 && wait <= full, `${failures}: ${wait}`)
      }
    }))
})
