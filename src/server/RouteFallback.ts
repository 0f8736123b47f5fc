import { Effect, Layer } from "effect"
import { FindMyWay, HttpRouter, HttpServerError, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpApi, type HttpApiGroup } from "effect/http-api"
import { HEALTH_PATHS } from "./Health.ts"
import { ROUTER_CONFIG } from "./RouterConfig.ts"

/**
 * Why no route took a request, for a service to answer in its own dialect
 * (the router's own answer is an empty 404 whatever the reason).
 */
export type Unmatched =
  /** No route has this path. */
  | { readonly _tag: "NotFound" }
  /** The path is a route's, asked with another method: `allow` lists the methods it has. */
  | { readonly _tag: "MethodNotAllowed"; readonly method: string; readonly allow: ReadonlyArray<string> }
  /** A path segment is longer than the routers take (`ROUTER_CONFIG`), so no route could match it. */
  | { readonly _tag: "SegmentTooLong"; readonly limit: number }

/** A route: its method and its path pattern (`/v1/vuln/:identifier`, `/mcp`). */
export type Route = readonly [method: string, path: string]

/** The routes an HttpApi contract declares. */
export const routesOf = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): ReadonlyArray<Route> => {
  const routes: Array<Route> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => routes.push([endpoint.method, endpoint.path])
  })
  return routes
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const

/** A `.` or `..` segment, plain or percent-encoded: never a resource, whatever follows. */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

const decoded = (segment: string) => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * Whether a segment of the path, as the router reads it (percent-decoded), is
 * longer than the routers' `maxParamLength`: the one reason a request for an
 * existing route finds none.
 */
export const segmentTooLong = (url: string): boolean => {
  const limit = ROUTER_CONFIG.maxParamLength!
  const path = pathOf(url)
  if (path.length <= limit) return false
  return path.split("/").some((segment) => segment.length > limit && decoded(segment).length > limit)
}

/**
 * What a request no route took ran into. The table is built once, with no
 * limit on a parameter's length: it only says which methods a path has.
 */
export const unmatchedBy = (routes: ReadonlyArray<Route>) => {
  const table = FindMyWay.make<true>({ maxParamLength: Number.MAX_SAFE_INTEGER })
  for (const [method, path] of routes) table.on(method, path as FindMyWay.PathInput, true)
  return (method: string, url: string): Unmatched => {
    if (DOT_SEGMENT.test(pathOf(url))) return { _tag: "NotFound" }
    if (segmentTooLong(url)) return { _tag: "SegmentTooLong", limit: ROUTER_CONFIG.maxParamLength! }
    const allow: Array<string> = METHODS.filter((m) => table.find(m, url) !== undefined)
    if (allow.includes("GET")) allow.splice(1, 0, "HEAD")
    return allow.length === 0 ? { _tag: "NotFound" } : { _tag: "MethodNotAllowed", method, allow }
  }
}

/**
 * A route for every method but HEAD at `path`. HttpRouter answers a HEAD that no route takes with
 * the path's GET route, so a catch-all that took HEAD too answered every HEAD itself: a 405 whose
 * `Allow` named HEAD, a health probe's 404.
 */
export const catchAll = <E, R>(
  path: HttpRouter.PathInput,
  handler: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) => {
  const [first, ...rest] = CATCH_ALL_METHODS
  return Layer.mergeAll(
    HttpRouter.add(first, path, handler),
    ...rest.map((method) => HttpRouter.add(method, path, handler))
  )
}

/** What HttpRouter routes (it takes no TRACE), HEAD left out. */
const CATCH_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "QUERY"] as const

const isRouteNotFound = (error: unknown): boolean =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"

/**
 * A service's answers for requests no route takes, in its own dialect: a
 * global middleware that turns the router's empty 404 into `answer(reason)`.
 * A dot segment (`/v1/../x`) is a 404 before any route sees it. `routes` are
 * the service's own; the health routes every service has are added here.
 * `answer` may be an effect, for a service that does more than answer (the
 * API logs the request). `reroute`, when given, names the URL the routes are
 * to read instead of the request's (undefined: the request's own); the
 * request handed to `answer` is the one that arrived.
 */
export const routeFallback = (
  routes: ReadonlyArray<Route>,
  answer: (
    unmatched: Unmatched,
    request: HttpServerRequest.HttpServerRequest
  ) => HttpServerResponse.HttpServerResponse | Effect.Effect<HttpServerResponse.HttpServerResponse>,
  options?: { readonly reroute?: ((url: string) => string | undefined) | undefined }
) => {
  const unmatched = unmatchedBy([...routes, ...HEALTH_PATHS.map((path) => ["GET", path] as const)])
  const answered = (reason: Unmatched, request: HttpServerRequest.HttpServerRequest) => {
    const response = answer(reason, request)
    return Effect.isEffect(response) ? response : Effect.succeed(response)
  }
  const reroute = options?.reroute
  return HttpRouter.middleware(
    <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        if (DOT_SEGMENT.test(pathOf(request.url))) return answered({ _tag: "NotFound" }, request)
        const url = reroute?.(request.url)
        const routed = url === undefined
          ? httpEffect
          : Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, request.modify({ url }))
        return Effect.catchIf(
          routed,
          isRouteNotFound,
          () => answered(unmatched(request.method, url ?? request.url), request)
        )
      }),
    { global: true }
  )
}

/** The usual message for each reason, for dialects that carry one. */
export const unmatchedMessage = (unmatched: Unmatched): string => {
  switch (unmatched._tag) {
    case "NotFound":
      return "not found: no such route"
    case "MethodNotAllowed":
      return `method ${unmatched.method} not allowed: use ${unmatched.allow.join(", ")}`
    case "SegmentTooLong":
      return `a path segment is longer than ${unmatched.limit} characters`
  }
}

/** The HTTP status of each reason: 404, 405 (with `Allow`), 414 URI Too Long. */
export const unmatchedStatus = (unmatched: Unmatched): number =>
  unmatched._tag === "NotFound" ? 404 : unmatched._tag === "MethodNotAllowed" ? 405 : 414

/** The error codes of the dialects that carry one. */
export const UNMATCHED_CODES: Record<Unmatched["_tag"], string> = {
  NotFound: "not_found",
  MethodNotAllowed: "method_not_allowed",
  SegmentTooLong: "uri_too_long"
}

/** `Allow` for a 405, nothing otherwise. */
export const unmatchedHeaders = (unmatched: Unmatched): Record<string, string> | undefined =>
  unmatched._tag === "MethodNotAllowed" ? { allow: unmatched.allow.join(", ") } : undefined
