import { Effect } from "effect"
import { FindMyWay, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi } from "effect/http-api"
import { ManageApi } from "./ManageApi.ts"

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const

/** Which methods each management path answers, built once from the contract. */
const allowedMethods = (() => {
  const table = FindMyWay.make<true>({ maxParamLength: Number.MAX_SAFE_INTEGER })
  HttpApi.reflect(ManageApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => table.on(endpoint.method, endpoint.path as `/${string}`, true)
  })
  table.on("GET", "/manage/v1/openapi.json", true)
  return (url: string): ReadonlyArray<string> => METHODS.filter((method) => table.find(method, url) !== undefined)
})()

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

const failure = (status: number, message: string, code: string, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe(
    { error: { message, type: status === 404 ? "not_found_error" : "invalid_request_error", code } },
    { status, ...(headers && { headers }) }
  )

/**
 * Any `/manage/v1/...` request no endpoint takes: 404 `not_found`, or 405 with
 * `Allow` for a known path asked with another method, in the management
 * dialect (otherwise the gateway's catch-all would call `manage` an unknown provider).
 */
export const ManageFallback = HttpRouter.add("*", "/manage/v1/*", (request: HttpServerRequest.HttpServerRequest) => {
  const allowed = allowedMethods(pathOf(request.url))
  return Effect.succeed(
    allowed.length === 0
      ? failure(404, "no such route", "not_found")
      : failure(405, `method ${request.method} not allowed: use ${allowed.join(", ")}`, "method_not_allowed", {
        allow: allowed.join(", ")
      })
  )
})
