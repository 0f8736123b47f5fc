import { Effect, Result } from "effect"
import { HttpServerResponse } from "effect/http"
import { BadRequest } from "../../schema/ErrorBody.ts"
import type { OsvQuery } from "../../schema/OsvQuery.ts"
import { type Coding, compressAsync, MIN_COMPRESS_BYTES, negotiate } from "../http/Compression.ts"
import { CACHED_BROTLI } from "./CachedAnswers.ts"
import { pageOffset, versionCheck } from "./PackageMatch.ts"
import { type PackageTarget, packageTarget } from "./PackageTarget.ts"

/**
 * `/v1/query`'s cached answers, shared by its handler (`OsvHandlers.ts`) and the fast path in
 * front of the router (`QueryFastPath.ts`): how a query resolves, the cache key of its answer, and
 * the response sent for it. One definition each, so both paths key and answer alike.
 */

/** A page's body as sent and its entity tag, and its compressed variants once a client asked for them. */
export interface QueryAnswer {
  readonly body: Uint8Array
  readonly etag: string
  gzip?: Uint8Array
  br?: Uint8Array
}

const JSON_TYPE = "application/json"
const VARY = "accept-encoding"
/** Which response of an answer a request gets: identity (not compressible, or no coding accepted) or a coding. */
export type QueryVariant = "identity" | Coding

export const variantOf = (
  answer: QueryAnswer,
  acceptEncoding: string | ReadonlyArray<string> | undefined
): QueryVariant => answer.body.byteLength < MIN_COMPRESS_BYTES ? "identity" : negotiate(acceptEncoding) ?? "identity"

/**
 * The answer in `coding`, compressed on first use (off the event loop) and kept on the answer;
 * `added` reports the bytes it grew by, for the cache's accounting. A compressor failure dies.
 */
export const compressAnswer = (answer: QueryAnswer, coding: Coding, added: (bytes: number) => void) =>
  answer[coding] === undefined
    // Quality 5 as /vuln's answers (`CACHED_BROTLI`). Answers reach 1.5 MB at a million records (tens of
    // milliseconds to compress), so they are compressed on libuv's pool, once per entry.
    ? Effect.map(Effect.orDie(compressAsync(coding, answer.body, CACHED_BROTLI)), (out) => {
      if (answer[coding] === undefined) {
        answer[coding] = out
        added(out.byteLength)
      }
      return answer[coding]!
    })
    : Effect.succeed(answer[coding]!)

/** What one query resolves to before the index is read; `at` names the batch entry in messages. */
export const resolveQuery = (query: OsvQuery, at: string): Result.Result<PackageTarget, BadRequest> => {
  if (query.commit !== undefined) {
    return Result.fail(
      new BadRequest({ message: `${at}commit queries are not supported; query by package and version` })
    )
  }
  if (query.package === undefined) return Result.fail(new BadRequest({ message: `${at}package is required` }))
  return Result.mapError(
    Result.flatMap(packageTarget(query.package, query.version), versionCheck),
    (e) => new BadRequest({ message: `${at}${e.message}` })
  )
}

/** The response cache's key of a page's answer: package, release, version (none apart from ""), page offset. */
export const queryKey = (target: PackageTarget, offset: number) =>
  `query\u0000${target.base}\u0000${target.name}\u0000${target.release ?? ""}\u0000${
    target.version ?? "\u0000"
  }\u0000${offset}`

/**
 * The response of a cached answer in `variant`, whose bytes are on the answer (`compressAnswer`).
 * An answer that could be compressed varies with `Accept-Encoding`; a POST is never answered 304.
 */
export const queryResponse = (answer: QueryAnswer, variant: QueryVariant) => {
  if (answer.body.byteLength < MIN_COMPRESS_BYTES) {
    return HttpServerResponse.uint8Array(answer.body, { contentType: JSON_TYPE, headers: { etag: answer.etag } })
  }
  if (variant === "identity") {
    return HttpServerResponse.uint8Array(answer.body, {
      contentType: JSON_TYPE,
      headers: { etag: answer.etag, vary: VARY }
    })
  }
  return HttpServerResponse.uint8Array(answer[variant]!, {
    contentType: JSON_TYPE,
    headers: { etag: answer.etag, vary: VARY, "content-encoding": variant }
  })
}

const isString = (v: unknown): v is string => typeof v === "string"
const PACKAGE_KEYS = new Set(["ecosystem", "name", "purl"])
const QUERY_KEYS = new Set(["package", "version", "page_token"])

/** A plain object whose keys are all in `allowed` and whose values are all strings (or, for `nested`, that object). */
const plainObject = (value: unknown, allowed: ReadonlySet<string>): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) &&
  Object.keys(value).every((key) => allowed.has(key))

/**
 * The cache key a `/v1/query` body asks for, or undefined on any doubt: a body that is not a JSON
 * object of exactly the shape the payload schema takes with strings where it takes strings (no
 * `commit`, no other member), or one the handler would refuse. Read once: what the handler would
 * decode from the same text (`JSON.parse`, then the schema), so the key is the handler's.
 */
export const queryKeyOfBody = (text: string): string | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!plainObject(parsed, QUERY_KEYS)) return undefined
  const { package: pkg, page_token, version } = parsed
  if (!plainObject(pkg, PACKAGE_KEYS) || !Object.values(pkg).every(isString)) return undefined
  if (version !== undefined && !isString(version)) return undefined
  if (page_token !== undefined && !isString(page_token)) return undefined
  const query = { package: pkg, ...(version === undefined ? {} : { version }) } as OsvQuery
  const target = resolveQuery(query, "")
  if (Result.isFailure(target)) return undefined
  const offset = pageOffset(page_token)
  return Result.isFailure(offset) ? undefined : queryKey(target.success, offset.success)
}
