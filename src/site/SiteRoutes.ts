import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE, isDatabaseUnavailable } from "../db/DatabaseUnavailable.ts"
import {
  routeFallback,
  routesOf,
  type Unmatched,
  UNMATCHED_CODES,
  unmatchedHeaders,
  unmatchedMessage,
  unmatchedStatus
} from "../server/RouteFallback.ts"
import { SiteApi } from "./Api.ts"
import { DeviceHandlers, RetiredHandlers } from "./DeviceHandlers.ts"
import { PageHandlers } from "./PageHandlers.ts"
import { unmatchedPage } from "./Pages.ts"
import { SessionHandlers } from "./SessionHandlers.ts"
import { errorJson } from "./SiteHttp.ts"

const TITLES: Record<Unmatched["_tag"], string> = {
  NotFound: "Page not found",
  MethodNotAllowed: "Method not allowed",
  SegmentTooLong: "Address too long"
}

/**
 * The site's answers for requests no route takes: 404, 405 with `Allow`, 414. Under `/api/` in
 * the JSON dialect of its endpoints (`{error, error_description}`), elsewhere as a page.
 */
const SiteFallback = routeFallback(
  [...routesOf(SiteApi), ["GET", "/api/site/v1/openapi.json"]],
  (unmatched, request) => {
    const status = unmatchedStatus(unmatched)
    const headers = unmatchedHeaders(unmatched)
    return request.url.startsWith("/api/")
      ? errorJson(status, UNMATCHED_CODES[unmatched._tag], unmatchedMessage(unmatched), headers)
      : unmatchedPage(status, TITLES[unmatched._tag], unmatchedMessage(unmatched), headers)
  }
)

/**
 * A defect on the site (a bug, or a database that failed mid-request) is logged with its cause and
 * answered in the site's dialect: under `/api/` RFC 6749's `server_error` in `{error,
 * error_description}`, elsewhere a page. Nothing of the cause reaches the client. Without it the
 * platform answered an empty 500, and since the access log replaces the platform's logger, nothing
 * said why (a sign-in racing a member's removal was found that way).
 */
const SiteFailures = HttpRouter.middleware(
  <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.catchDefect(httpEffect, (defect) =>
      Effect.flatMap(
        Effect.andThen(
          isDatabaseUnavailable(defect)
            ? Effect.logWarning("site request failed: the database cannot be reached")
            : Effect.logError("site request failed", defect),
          HttpServerRequest.HttpServerRequest
        ),
        (request) => Effect.succeed(failureAnswer(request.url.startsWith("/api/"), isDatabaseUnavailable(defect)))
      )),
  { global: true }
)

/** RFC 6749's `temporarily_unavailable` (503) while the database cannot be reached, else `server_error` (500). */
const failureAnswer = (api: boolean, unavailable: boolean) => {
  if (!unavailable) {
    return api
      ? errorJson(500, "server_error", "the server failed to answer; try again")
      : unmatchedPage(500, "Something went wrong", "The server failed to answer. Try again.")
  }
  const headers = { "retry-after": String(DATABASE_RETRY_AFTER_SECONDS) }
  return api
    ? errorJson(503, "temporarily_unavailable", DATABASE_UNAVAILABLE, headers)
    : unmatchedPage(
      503,
      "Temporarily unavailable",
      "The service cannot reach its database just now. Try again in a few seconds.",
      headers
    )
}

/**
 * The site service's routes: device grant, sessions, pages, the retired poll
 * path, `/api/site/v1/openapi.json`, and the answers for requests none of
 * them takes. The throttles and the authorize limiter (shared by every
 * process, in the database), grants, members, sessions and organizations
 * come from the app.
 */
export const SiteRoutes = Layer.mergeAll(
  HttpApiBuilder.layer(SiteApi, { openapiPath: "/api/site/v1/openapi.json" }),
  SiteFallback,
  SiteFailures
).pipe(
  Layer.provide([DeviceHandlers, RetiredHandlers, SessionHandlers, PageHandlers])
)
