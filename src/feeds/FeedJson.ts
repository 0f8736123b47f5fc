import { Config, Effect, Option, Redacted, Stream } from "effect"
import { guardBody } from "./BodyGuard.ts"
import { refused } from "./FeedError.ts"
import { type FetchPlan, politeFetch } from "./PoliteFetch.ts"

/** An index (a release list, a commit, a comparison, a CSV of changes) is small; anything past this is not one. */
export const INDEX_BYTES = 32 * 1024 * 1024

export type JsonFetched =
  | { readonly _tag: "NotModified" }
  | {
    readonly _tag: "Json"
    readonly value: unknown
    readonly url: string
    readonly etag: string | undefined
    readonly next: string | undefined
  }

/** The `rel="next"` URL of a GitHub `Link` header, if any. */
export const nextLink = (link: string | undefined): string | undefined => {
  if (link === undefined) return undefined
  for (const part of link.split(",")) {
    const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part)
    if (m !== null) return m[1]
  }
  return undefined
}

/**
 * GETs a small JSON document (conditionally when `etag` is given) through
 * the same caps as any feed body, and parses it whole. A body that is not
 * JSON is `Corrupt`.
 */
export const fetchJson = Effect.fnUntraced(
  function*(plan: Omit<FetchPlan, "contentTypes"> & { readonly contentTypes?: ReadonlyArray<string> }) {
    const fetched = yield* politeFetch({ contentTypes: ["application/json"], ...plan })
    if (fetched._tag === "NotModified") return { _tag: "NotModified" } satisfies JsonFetched as JsonFetched
    const limits = { maxBytes: INDEX_BYTES, maxInflatedBytes: INDEX_BYTES, maxRatio: 1 }
    const chunks = yield* Stream.runCollect(guardBody(fetched.body, limits, fetched.contentLength))
    const text = Buffer.concat(chunks).toString("utf8")
    const value = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => refused("Corrupt", `${fetched.url} did not answer JSON`)
    })
    return {
      _tag: "Json",
      value,
      url: fetched.url,
      etag: fetched.etag,
      next: nextLink(fetched.link)
    } satisfies JsonFetched as JsonFetched
  },
  Effect.scoped
)

/**
 * GitHub's API headers for one request: `VDB_GITHUB_TOKEN` (optional; it
 * raises the anonymous 60 requests an hour to 5,000) as a bearer token,
 * sent only to the API, never to the archive and download hosts it links to.
 */
export const githubAuth = Effect.gen(function*() {
  const token = yield* Config.option(Config.Redacted("VDB_GITHUB_TOKEN")).pipe(Effect.orDie)
  return Option.match(token, {
    onNone: () => ({}),
    onSome: (t) =>
      Redacted.value(t).trim() === ""
        ? {}
        : { secretHeaders: { authorization: Redacted.make(`Bearer ${Redacted.value(t).trim()}`) } }
  })
})
