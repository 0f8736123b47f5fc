import { Effect } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import {
  catchAll,
  routesOf,
  UNMATCHED_CODES,
  unmatchedBy,
  unmatchedHeaders,
  unmatchedMessage,
  unmatchedStatus
} from "../../server/RouteFallback.ts"
import { ManageApi } from "./ManageApi.ts"

const unmatched = unmatchedBy([...routesOf(ManageApi), ["GET", "/manage/v1/openapi.json"]])

/**
 * Any `/manage/v1/...` request no endpoint takes, in the management dialect
 * (otherwise the gateway's catch-all would call `manage` an unknown provider):
 * 404 `not_found`, 405 `method_not_allowed` with `Allow` for a known path
 * asked with another method, 414 `uri_too_long` for a path segment longer
 * than the router takes.
 */
export const ManageFallback = catchAll("/manage/v1/*", (request: HttpServerRequest.HttpServerRequest) => {
  const reason = unmatched(request.method, request.url)
  const status = unmatchedStatus(reason)
  return Effect.succeed(HttpServerResponse.jsonUnsafe(
    {
      error: {
        message: reason._tag === "NotFound" ? "no such route" : unmatchedMessage(reason),
        type: status === 404 ? "not_found_error" : "invalid_request_error",
        code: UNMATCHED_CODES[reason._tag]
      }
    },
    { status, headers: unmatchedHeaders(reason) ?? {} }
  ))
})
