import { HttpServerResponse } from "effect/http"
import { INVALID_REQUEST, isRecord, PARSE_ERROR } from "./JsonRpcBody.ts"

/** The MCP service's HTTP errors (outside JSON-RPC): `{error:{code,message}}`. */
export const errorBody = (
  status: number,
  code: string,
  message: string,
  headers: Readonly<Record<string, string>> = {}
) => HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status, headers })

/**
 * The refusals the MCP server sends without a body (its JSON-RPC errors have one), in this
 * service's dialect. By status, then by method where the reasons differ.
 */
const bareRefusal = (status: number, method: string): readonly [code: string, message: string] | undefined => {
  switch (status) {
    case 400:
      return [
        "bad_request",
        method === "DELETE"
          ? "send the Mcp-Session-Id of the session to end"
          : "request not accepted: a JSON-RPC batch needs a 2025-03-26 session and no initialize"
      ]
    case 403:
      return ["forbidden", "requests with an Origin header (from a browser) are not served"]
    case 404:
      return ["not_found", "unknown or ended MCP session: initialize a new one"]
    case 406:
      return ["not_acceptable", "send Accept: application/json, text/event-stream"]
    case 415:
      return ["unsupported_media_type", "send Content-Type: application/json"]
  }
  return undefined
}

/** A response of the MCP server, its bare refusals given a body and its JSON-RPC ones without the library's tag. */
export const withErrorBody = (response: HttpServerResponse.HttpServerResponse, method: string) => {
  const refusal = response.body._tag === "Empty" && response.headers["content-type"] === undefined
    ? bareRefusal(response.status, method)
    : undefined
  return refusal === undefined
    ? jsonRpcRefusal(response)
    : errorBody(response.status, refusal[0], refusal[1], response.headers)
}

const TAG = Buffer.from("\"_tag\"")

/**
 * The MCP library's own JSON-RPC refusals of a message, sent before any handler runs, in the JSON-RPC
 * form without what the library adds:
 * - its error class's `_tag` beside `code` and `message` (a JSON-RPC error object has `code`,
 *   `message` and `data`; the tag names a class of the library), dropped;
 * - HTTP 200 for a body that is not JSON (-32700) or not a JSON-RPC message (-32600). The MCP
 *   transport says a server that cannot accept a POSTed message answers an HTTP error status, and
 *   the MCP SDKs answer 400, so these are 400 (the library already answers 400 for an empty batch).
 * Handlers' errors (unknown method, unknown tool, invalid arguments) carry no tag: they pass as
 * they are, as does any body without `"_tag"` (found by a byte search; only a body holding it is parsed).
 */
const jsonRpcRefusal = (response: HttpServerResponse.HttpServerResponse) => {
  const body = response.body
  // No size bound: a refusal quotes the request's id, which the client may make as long as the body cap allows.
  if (body._tag !== "Uint8Array" || !body.contentType.startsWith("application/json")) return response
  if (Buffer.from(body.body.buffer, body.body.byteOffset, body.body.byteLength).indexOf(TAG) === -1) return response
  let message: unknown
  try {
    message = JSON.parse(new TextDecoder().decode(body.body))
  } catch {
    return response
  }
  if (!isRecord(message) || !isRecord(message.error) || !("_tag" in message.error)) return response
  const { _tag, ...error } = message.error
  const status = response.status === 200 && (error.code === PARSE_ERROR || error.code === INVALID_REQUEST)
    ? 400
    : response.status
  return HttpServerResponse.jsonUnsafe({ jsonrpc: message.jsonrpc, id: message.id, error }, {
    status,
    headers: response.headers
  })
}
