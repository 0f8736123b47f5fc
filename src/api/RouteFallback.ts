import { Clock, Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import type { ErrorBody } from "../../schema/ErrorBody.ts"
import { ApiKeyAuth } from "../auth/ApiKeyAuth.ts"
import { signedInWith } from "../auth/Jwt.ts"
import { VerifiedTokens } from "../auth/VerifiedTokens.ts"
import { clientAddressOf, TrustedProxies } from "../server/ClientAddress.ts"
import {
  routeFallback,
  routesOf,
  unmatchedHeaders,
  unmatchedMessage,
  unmatchedStatus
} from "../server/RouteFallback.ts"
import { Api } from "./Api.ts"
import { DOCS_PATH, DOCS_SCRIPT_PATH } from "./ApiDocs.ts"

/** Plain routes of the API service beside the HttpApi's own endpoints: the OpenAPI document, the docs page and its script, and `/`. */
const EXTRA_GET_PATHS = ["/v1/openapi.json", DOCS_PATH, DOCS_SCRIPT_PATH, "/"]

/**
 * The usage log's route for every request no route takes: one fixed label, so
 * invented paths cannot add rows to `vdb usage` (the path goes, clipped, where
 * a matched request's identifier goes).
 */
export const UNMATCHED_ROUTE = "unmatched"

const decodes = (segment: string) => {
  try {
    decodeURIComponent(segment)
    return true
  } catch {
    return false
  }
}

/**
 * The URL the API's routes read, when it differs from the request's: `;` made
 * `%3B`, and each `%` of a segment that does not percent-decode (`%zz`, `%FF`,
 * `%C3%28`) made `%25`. The router (effect's FindMyWay port) otherwise cuts
 * the path at `;` as at `?` (so `/vuln/CVE-2021-44228;DROP` answered the plain
 * id) and finds no route for a path it cannot decode (404 without
 * authentication). Made literal, both reach the handlers as part of the
 * identifier, which `identifierProblem` refuses with 400 after authentication.
 */
export const literalPath = (url: string): string | undefined => {
  const query = url.indexOf("?")
  const path = query === -1 ? url : url.slice(0, query)
  if (!path.includes(";") && !path.includes("%")) return undefined
  const literal = path.split("/").map((segment) => decodes(segment) ? segment : segment.replaceAll("%", "%25")).join(
    "/"
  )
    .replaceAll(";", "%3B")
  return literal === path ? undefined : literal + (query === -1 ? "" : url.slice(query))
}

/**
 * The API's answers for requests no endpoint takes, in the API's dialect
 * (`{success:false,error}`) rather than the router's empty 404: 404 for an
 * unknown path or a dot segment, 405 with `Allow` for a known path asked
 * with another method, 414 for a path segment longer than the router takes
 * (an identifier of more than 2,048 characters; up to that, the handler's 400).
 * Each is logged in the usage log (spec 1: every request is logged for the
 * security audit) under `UNMATCHED_ROUTE`, with the organization its
 * credentials name when they are valid; it is not counted against the rate
 * limits, and the answer does not depend on the credentials.
 */
export const RouteFallback = Layer.unwrap(Effect.gen(function*() {
  const auth = yield* ApiKeyAuth
  const tokens = yield* VerifiedTokens

  const viaApiKey = (value: string) => Effect.map(auth.verify(`ApiKey ${value}`), ({ org }) => org.uuid)
  const viaBearer = (token: string, nowMillis: number) =>
    Effect.flatMap(
      tokens.claimsOf(token, nowMillis),
      (claims) =>
        Effect.map(
          auth.organization(claims.orgUuid),
          ({ org, secret }) => signedInWith(claims, secret) ? org.uuid : null
        )
    )

  /**
   * The organization whose valid `ApiKey` or Bearer token the request carries (read as the
   * HttpApi reads them; an inactive organization is still named, as a 403 is), else null.
   */
  const orgOf = (authorization: string | undefined, nowMillis: number): Effect.Effect<string | null> => {
    const header = authorization?.trim() ?? ""
    const space = header.indexOf(" ")
    const scheme = header.slice(0, space).toLowerCase()
    const value = header.slice(space + 1).trim()
    const named = space === -1 || value === ""
      ? Effect.succeed(null)
      : scheme === "apikey"
      ? viaApiKey(value)
      : scheme === "bearer"
      ? viaBearer(value, nowMillis)
      : Effect.succeed(null)
    return named.pipe(
      Effect.catch(() => Effect.succeed(null)),
      // A store that fails leaves the request unnamed, not unanswered.
      Effect.catchDefect((defect) =>
        Effect.as(Effect.logError("usage log: naming a request no route takes failed", defect), null)
      )
    )
  }

  const TOKEN_PATH = "/v1/auth/token"
  return routeFallback(
    [...routesOf(Api), ...EXTRA_GET_PATHS.map((path) => ["GET", path] as const)],
    (matched, request) =>
      Effect.flatMap(
        Effect.all([Clock.currentTimeMillis, TrustedProxies.useSync((list) => list)]),
        ([now, trusted]) => {
          const started = performance.now()
          // The path without its query, which may carry anything (the access log leaves it out too).
          const query = request.url.indexOf("?")
          const path = query === -1 ? request.url : request.url.slice(0, query)
          // Sign-in refuses HEAD (it would mint a token), so its 405 must not offer it.
          const unmatched = matched._tag === "MethodNotAllowed" && path === TOKEN_PATH
            ? { ...matched, allow: matched.allow.filter((method) => method !== "HEAD") }
            : matched
          const response = HttpServerResponse.jsonUnsafe(
            { success: false, error: unmatchedMessage(unmatched) } satisfies ErrorBody,
            {
              status: unmatchedStatus(unmatched),
              headers: unmatchedHeaders(unmatched) ?? {}
            }
          )
          return Effect.map(orgOf(request.headers.authorization, now), (orgUuid) => {
            auth.record(
              request,
              orgUuid,
              UNMATCHED_ROUTE,
              path,
              response.status,
              started,
              new Date(now),
              clientAddressOf(trusted, request)
            )
            return response
          })
        }
      ),
    { reroute: literalPath }
  )
}))
