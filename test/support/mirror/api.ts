import { readdirSync, readFileSync } from "node:fs"
import type { IncomingMessage, ServerResponse } from "node:http"
import { fileURLToPath } from "node:url"

/** One request to an API route of the mirror (the authorization header is kept: the mirror is the publisher's side). */
export interface ApiRequest {
  readonly path: string
  readonly query: URLSearchParams
  readonly status: number
  readonly authorization: string | undefined
  readonly accept: string | undefined
  readonly apiVersion: string | undefined
  readonly userAgent: string | undefined
}

/** The next `times` requests to `path` are answered `status` with `headers` (a rate limit, an outage). */
export interface ApiFault {
  readonly status: number
  readonly headers?: Record<string, string>
  times: number
  /** Requests answered normally before the fault starts (a run cut after its first pages). */
  after?: number
}

export interface ApiContext {
  readonly url: (path: string) => string
  readonly log: Array<ApiRequest>
  readonly faults: Map<string, ApiFault>
}

/** Answers the request when it is the route's; false to let the next route (or the file server) have it. */
export type Route = (ctx: ApiContext, req: IncomingMessage, res: ServerResponse, url: URL) => boolean

export const FIXTURES = fileURLToPath(new URL("../../fixtures/", import.meta.url))

/** The JSON files of a fixture folder, parsed, in name order. */
export const jsonFiles = (dir: string): Array<Record<string, unknown>> =>
  readdirSync(`${FIXTURES}${dir}`).filter((f) => f.endsWith(".json")).sort()
    .map((f) => JSON.parse(readFileSync(`${FIXTURES}${dir}/${f}`, "utf8")) as Record<string, unknown>)

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const bytes = Buffer.from(JSON.stringify(body))
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(bytes.length),
    ...headers
  })
  res.end(bytes)
}

/** Logs the request and answers its fault, if one is set; true when it did. */
export const answerFault = (ctx: ApiContext, req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
  const fault = ctx.faults.get(url.pathname)
  if (fault === undefined) return false
  if (fault.after !== undefined && fault.after > 0) {
    fault.after--
    return false
  }
  if (--fault.times <= 0) ctx.faults.delete(url.pathname)
  sendJson(res, fault.status, { message: "API rate limit exceeded" }, fault.headers)
  note(ctx, req, url, fault.status)
  return true
}

export const note = (ctx: ApiContext, req: IncomingMessage, url: URL, status: number) =>
  ctx.log.push({
    path: url.pathname,
    query: url.searchParams,
    status,
    authorization: req.headers.authorization,
    accept: req.headers.accept,
    apiVersion: req.headers["x-github-api-version"] as string | undefined,
    userAgent: req.headers["user-agent"]
  })

/** An opaque paging cursor, as the publishers' are: the offset, encoded. */
export const cursorOf = (offset: number) => Buffer.from(`o:${offset}`).toString("base64url")
export const offsetOf = (cursor: string | null) =>
  cursor === null ? 0 : Number(Buffer.from(cursor, "base64url").toString().slice(2)) || 0
