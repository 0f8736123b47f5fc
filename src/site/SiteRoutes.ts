import { Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApprovalThrottle } from "../device/ApprovalThrottle.ts"
import { AuthorizeLimiter } from "../device/AuthorizeLimiter.ts"
import { SignInThrottle } from "../members/SignInThrottle.ts"
import { routeFallback, routesOf, UNMATCHED_CODES, type Unmatched, unmatchedHeaders, unmatchedMessage, unmatchedStatus } from "../server/RouteFallback.ts"
import { SiteApi } from "./Api.ts"
import { DeviceHandlers, RetiredHandlers } from "./DeviceHandlers.ts"
import { PageHandlers } from "./PageHandlers.ts"
import { unmatchedPage } from "./Pages.ts"
import { errorJson } from "./SiteHttp.ts"
import { SessionHandlers } from "./SessionHandlers.ts"

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
 * The site service's routes: device grant, sessions, pages, the retired poll
 * path, `/api/site/v1/openapi.json`, and the answers for requests none of
 * them takes. The limiter and throttles live in the process; grants, members,
 * sessions and organizations come from the app.
 */
export const SiteRoutes = Layer.merge(HttpApiBuilder.layer(SiteApi, { openapiPath: "/api/site/v1/openapi.json" }), SiteFallback).pipe(
  Layer.provide([DeviceHandlers, RetiredHandlers, SessionHandlers, PageHandlers]),
  Layer.provide([AuthorizeLimiter.layerMemory, ApprovalThrottle.layerMemory, SignInThrottle.layerMemory])
)
