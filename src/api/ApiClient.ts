import { Clock, Context, Effect, Layer, Redacted, Semaphore } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import { formatApiKey } from "../auth/ApiKey.ts"
import { type ClientCredentials, hasSecret, type OrgSecretCredentials } from "../auth/OrgCredentials.ts"
import { signTokenRequest } from "../auth/SigV4Token.ts"
import { Api } from "./Api.ts"
import { Authentication, SignedRequest, SignInFailed } from "./ApiSecurity.ts"

/** `apiKey`: a static `ApiKey` header. `jwt`: sign in with AWS4-HMAC-SHA512, send `Bearer`, refresh before expiry. */
export type CredentialMode = "apiKey" | "jwt"

/** Refresh this long before `exp`, so a token never expires in flight. */
const REFRESH_MARGIN_MILLIS = 60_000

/**
 * The spec's base URL ends in `/v1`; the HttpApi paths carry `/v1` themselves,
 * so the client talks to the origin (plus any path before `/v1`).
 */
export const clientOrigin = (baseUrl: string): string => baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")

const requestPath = (request: HttpClientRequest.HttpClientRequest) => {
  const url = new URL(request.url, "http://localhost")
  return { path: url.pathname, query: url.search.slice(1) }
}

/** Signs `GET /v1/auth/token` requests (the only endpoint with this middleware). */
export const SignedRequestClient = (credentials: OrgSecretCredentials) =>
  HttpApiMiddleware.layerClient(SignedRequest, ({ next, request }) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const { path, query } = requestPath(request)
      const signed = signTokenRequest({
        orgUuid: credentials.orgUuid,
        secret: Redacted.value(credentials.secret),
        path,
        query,
        now
      })
      return next(request.pipe(
        HttpClientRequest.setHeader("authorization", signed.authorization),
        HttpClientRequest.setHeader("x-amz-date", signed.amzDate)
      ))
    }))

/** Without the secret there is nothing to sign `/auth/token` with: the request goes unsigned (and the server refuses it). */
const NoSignIn = HttpApiMiddleware.layerClient(SignedRequest, ({ next, request }) => next(request))

export const ApiKeyClient = (credentials: ClientCredentials) => {
  const header = hasSecret(credentials)
    ? formatApiKey(credentials.orgUuid, Redacted.value(credentials.secret))
    : Redacted.value(credentials.apiKey)
  return HttpApiMiddleware.layerClient(
    Authentication,
    ({ next, request }) => next(HttpClientRequest.setHeader(request, "authorization", header))
  )
}

/** Bearer mode: one token shared by all requests, fetched again when within a minute of `exp`. */
export const JwtClient = (credentials: OrgSecretCredentials, baseUrl: string) =>
  HttpApiMiddleware.layerClient(
    Authentication,
    Effect.gen(function*() {
      const httpClient = yield* HttpClient.HttpClient
      const auth = yield* HttpApiClient.group(Api, { group: "auth", httpClient, baseUrl: clientOrigin(baseUrl) }).pipe(
        Effect.provide(SignedRequestClient(credentials))
      )
      const lock = yield* Semaphore.make(1)
      let current: { readonly token: string; readonly expMillis: number } | undefined
      const token = lock.withPermits(1)(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (current !== undefined && current.expMillis - now > REFRESH_MARGIN_MILLIS) return current.token
        const issued = yield* auth.token().pipe(
          // The middleware may only fail with SignInFailed; an unreachable server is not a refused
          // sign-in, so it stays the HTTP error (a defect here) that the CLI describes as such.
          Effect.catchTag("HttpClientError", (e) => Effect.die(e)),
          Effect.mapError((e) =>
            new SignInFailed({ message: `sign-in failed: ${"message" in e ? e.message : String(e)}` })
          )
        )
        current = { token: issued.token, expMillis: issued.exp * 1000 }
        return issued.token
      }))
      return ({ next, request }) => Effect.flatMap(token, (t) => next(HttpClientRequest.bearerToken(request, t)))
    })
  )

export type VdbClient = HttpApiClient.ForApi<typeof Api>

/** The typed client of the vulnerability data API, derived from the HttpApi. */
export class ApiClient extends Context.Service<ApiClient, VdbClient>()("vdb/api/ApiClient") {
  /** JWT mode needs the organization secret; with only an API key it signs every request with the key. */
  static readonly layer = (options: {
    readonly baseUrl: string
    readonly credentials: ClientCredentials
    readonly mode: CredentialMode
  }) => {
    const credentials = options.credentials
    if (!hasSecret(credentials)) {
      return Layer.effect(ApiClient, HttpApiClient.make(Api, { baseUrl: clientOrigin(options.baseUrl) })).pipe(
        Layer.provide([ApiKeyClient(credentials), NoSignIn])
      )
    }
    return Layer.effect(ApiClient, HttpApiClient.make(Api, { baseUrl: clientOrigin(options.baseUrl) })).pipe(
      Layer.provide([
        options.mode === "apiKey" ? ApiKeyClient(credentials) : JwtClient(credentials, options.baseUrl),
        SignedRequestClient(credentials)
      ])
    )
  }
}
