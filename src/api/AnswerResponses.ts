import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { negotiate } from "../http/Compression.ts"
import { compressible, encoded, type OpenAnswer, type VulnAnswer } from "./CachedAnswers.ts"
import { noneMatch } from "./Conditional.ts"

// The HTTP responses of cached answers (`CachedAnswers.ts`): conditional requests and content codings.

const JSON_TYPE = "application/json"
/** `/vuln` is sent in several codings: shared caches must keep them apart. */
const VARY = "accept-encoding"

/** 304: no body, the tag (and `Vary` where the answer has codings). Still counted and logged by the middleware. */
const notModified = (etag: string, vary: boolean) =>
  HttpServerResponse.empty({ status: 304, headers: vary ? { etag, vary: VARY } : { etag } })

/** The `/vuln` answer in the coding the client prefers (compressed once per entry, then kept). */
export const vulnResponse = (
  answer: VulnAnswer,
  request: HttpServerRequest.HttpServerRequest,
  compressedAdded: (bytes: number) => void
) => {
  const varies = compressible(answer)
  if (noneMatch(request.headers["if-none-match"], answer.etag)) return notModified(answer.etag, varies)
  if (!varies) {
    return HttpServerResponse.uint8Array(answer.identity, { contentType: JSON_TYPE, headers: { etag: answer.etag } })
  }
  const coding = negotiate(request.headers["accept-encoding"])
  if (coding === undefined) {
    return HttpServerResponse.uint8Array(answer.identity, {
      contentType: JSON_TYPE,
      headers: { etag: answer.etag, vary: VARY }
    })
  }
  const { added, body } = encoded(answer, coding)
  if (added > 0) compressedAdded(added)
  return HttpServerResponse.uint8Array(body, {
    contentType: JSON_TYPE,
    headers: { etag: answer.etag, vary: VARY, "content-encoding": coding }
  })
}

export const openAnswerResponse = (
  answer: OpenAnswer,
  request: HttpServerRequest.HttpServerRequest,
  text: (answer: OpenAnswer) => string
) =>
  noneMatch(request.headers["if-none-match"], answer.etag)
    ? notModified(answer.etag, false)
    : HttpServerResponse.text(text(answer), { contentType: JSON_TYPE, headers: { etag: answer.etag } })
