import { HttpServerResponse } from "effect/http"
import type { ErrorBody } from "../../schema/ErrorBody.ts"
import { routeFallback, routesOf, unmatchedHeaders, unmatchedMessage, unmatchedStatus } from "../server/RouteFallback.ts"
import { Api } from "./Api.ts"

/** Plain routes of the API service beside the HttpApi's own endpoints: the OpenAPI document and the docs page. */
const EXTRA_GET_PATHS = ["/v1/openapi.json", "/docs"]

/**
 * The API's answers for requests no endpoint takes, in the API's dialect
 * (`{success:false,error}`) rather than the router's empty 404: 404 for an
 * unknown path or a dot segment, 405 with `Allow` for a known path asked
 * with another method, 414 for a path segment longer than the router takes
 * (an identifier of more than 2,048 characters; up to that, the handler's 400).
 */
export const RouteFallback = routeFallback(
  [...routesOf(Api), ...EXTRA_GET_PATHS.map((path) => ["GET", path] as const)],
  (unmatched) =>
    HttpServerResponse.jsonUnsafe({ success: false, error: unmatchedMessage(unmatched) } satisfies ErrorBody, {
      status: unmatchedStatus(unmatched),
      headers: unmatchedHeaders(unmatched) ?? {}
    })
)
