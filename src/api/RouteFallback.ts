import { Effect } from "effect"
import { FindMyWay, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi } from "effect/http-api"
import type { ErrorBody } from "../../schema/ErrorBody.ts"
import { Api } from "./Api.ts"

/**
 * Plain routes of the API service beside the HttpApi's own endpoints: the
 * OpenAPI document, the docs page and the health routes every service has
 * (`src/server/Health.ts`, named here so the arrow stays server → api).
 */
const EXTRA_GET_PATHS = ["/v1/openapi.json", "/docs", "/healthz", "/readyz"]
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const

/** Which methods each path answers, built once from the HttpApi contract. */
const allowedMethods = (() => {
  // Any parameter length: the table only says which methods a path has.
  const table = FindMyWay.make<true>({ maxParamLength: Number.MAX_SAFE_INTEGER })
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => table.on(endpoint.method, endpoint.path as `/${string}`, true)
  })
  for (const path of EXTRA_GET_PATHS) table.on("GET", path as `/${string}`, true)
  return (url: string): ReadonlyArray<string> => {
    const allowed: Array<string> = METHODS.filter((method) => table.find(method, url) !== undefined)
    if (allowed.includes("GET")) allowed.splice(1, 0, "HEAD")
    return allowed
  }
})()

/** A `.` or `..` segment, plain or percent-encoded: never a resource, whatever follows. */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

const errorBody = (status: number, error: string, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe({ success: false, error } satisfies ErrorBody, { status, ...(headers && { headers }) })

const notFound = errorBody(404, "not found: no such route")

const isRouteNotFound = (error: unknown): boolean =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"

const fallback = <E, R>(
  httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (DOT_SEGMENT.test(pathOf(request.url))) return Effect.succeed(notFound)
    return Effect.catchIf(httpEffect, isRouteNotFound, () => {
      const allowed = allowedMethods(request.url)
      return Effect.succeed(
        allowed.length === 0 ? notFound : errorBody(405, `method ${request.method} not allowed: use ${allowed.join(", ")}`, {
          allow: allowed.join(", ")
        })
      )
    })
  })

/**
 * The API's answers for requests no endpoint takes, in the API's dialect
 * (`{success:false,error}`) rather than the router's empty 404: 404 for an
 * unknown path or a dot segment, 405 with `Allow` for a known path asked
 * with another method.
 */
export const RouteFallback = HttpRouter.middleware(fallback, { global: true })
