import { Config, Effect, Option } from "effect"
import { isIP } from "node:net"
import { type FeedRefused, refused, shownUrl } from "./FeedError.ts"

/** `nist-nvd` → `VDB_FEED_NIST_NVD_URL`. */
export const overrideVariable = (source: string) => `VDB_FEED_${source.toUpperCase().replaceAll("-", "_")}_URL`

const isLoopback = (hostname: string) => {
  const host = hostname.replace(/^\[|\]$/g, "")
  if (host === "localhost") return true
  if (isIP(host) === 4) return host.startsWith("127.")
  return host === "::1"
}

/**
 * Whether a URL may be fetched. Publishers' defaults are https. An override
 * (`VDB_FEED_<SOURCE>_URL`) must be https too, except plain http to a
 * loopback address (a local mirror, the tests' feed mirror): nothing leaves
 * the machine unencrypted.
 */
export const checkUrl = (url: string): Effect.Effect<URL, FeedRefused> => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return Effect.fail(refused("InsecureUrl", "the feed URL does not parse"))
  }
  if (parsed.protocol === "https:") return Effect.succeed(parsed)
  if (parsed.protocol === "http:" && isLoopback(parsed.hostname)) return Effect.succeed(parsed)
  return Effect.fail(
    refused("InsecureUrl", `${shownUrl(parsed)}: only https (or http to a loopback address) is fetched`)
  )
}

/**
 * A redirect is followed only to https, or, when the feed itself is a
 * loopback http mirror, to the same loopback host: an https feed is never
 * downgraded, and a mirror cannot bounce the fetch off the machine.
 */
export const checkRedirect = (from: URL, location: string): Effect.Effect<URL, FeedRefused> => {
  let to: URL
  try {
    to = new URL(location, from)
  } catch {
    return Effect.fail(refused("InsecureRedirect", `${shownUrl(from)} redirected to a Location that does not parse`))
  }
  if (to.protocol === "https:") return Effect.succeed(to)
  if (
    to.protocol === "http:" && from.protocol === "http:" && to.hostname === from.hostname && isLoopback(to.hostname)
  ) {
    return Effect.succeed(to)
  }
  return Effect.fail(
    refused(
      "InsecureRedirect",
      `${shownUrl(from)} redirected to ${to.protocol}//${to.host}: redirects are followed only to https`
    )
  )
}

/** The URL a feed is fetched from: its override when set, else the publisher's default. */
export const feedUrl = Effect.fnUntraced(function*(source: string, defaultUrl: string) {
  const override = yield* Config.option(Config.String(overrideVariable(source)))
  return Option.getOrElse(Option.filter(override, (u) => u.trim() !== ""), () => defaultUrl).trim()
})
