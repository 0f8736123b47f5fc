import { Config, Effect, Exit, Redacted, Schema } from "effect"
import { UpstreamAuthFailed } from "../../../schema/GatewayError.ts"
import { KiroAccessToken, type KiroSignIn } from "../../../schema/KiroSignIn.ts"
import type { UpstreamClient } from "../../http/UpstreamClient.ts"

/** Where sign-ins are refreshed; each override replaces the whole URL (tests, other regions). */
export interface KiroAuthEndpoints {
  /** `POST {auth}/refreshToken` for `social` sign-ins. */
  readonly social: URL
  /** SSO OIDC `CreateToken` for `idc` sign-ins; `undefined`: `https://oidc.{region}.amazonaws.com/token`. */
  readonly idc: URL | undefined
}

export const DEFAULT_SOCIAL_REFRESH_URL = "https://prod.us-east-1.auth.desktop.kiro.dev/refreshToken"
const DEFAULT_REGION = "us-east-1"

/** `VDB_PROVIDER_KIRO_AUTH_URL` (social) and `VDB_PROVIDER_KIRO_OIDC_URL` (idc). */
export const kiroAuthEndpoints = Config.all({
  social: Config.URL("VDB_PROVIDER_KIRO_AUTH_URL").pipe(Config.withDefault(new URL(DEFAULT_SOCIAL_REFRESH_URL))),
  idc: Config.URL("VDB_PROVIDER_KIRO_OIDC_URL").pipe(
    Config.option,
    Config.map((o) => o._tag === "Some" ? o.value : undefined)
  )
})

/** A freshly minted access token. */
export interface MintedToken {
  readonly accessToken: Redacted.Redacted<string>
  readonly expiresInSeconds: number
  /** Present when the provider rotated the refresh token: the old one no longer works. */
  readonly refreshToken: string | undefined
  readonly profileArn: string | undefined
}

/** Both services answer with these fields (others, e.g. `tokenType`, are ignored). */
const TokenAnswer = Schema.Struct({
  accessToken: KiroAccessToken,
  expiresIn: Schema.Finite.check(Schema.isGreaterThan(0)),
  refreshToken: Schema.optionalKey(Schema.NonEmptyString),
  profileArn: Schema.optionalKey(Schema.NonEmptyString)
})
const decodeAnswer = Schema.decodeUnknownExit(Schema.fromJsonString(TokenAnswer))

/** A sign-in service answers in well under a second; past this the refresh is `unreachable`. */
const REFRESH_TIMEOUT = "30 seconds"
/**
 * The longest token life taken from an answer (a year): `expiresIn` is only checked to be a positive
 * number, and a huge one made no date (a rotated refresh token was then lost with the answer).
 */
const MAX_EXPIRES_IN_SECONDS = 365 * 24 * 3600

const refusedBy = new UpstreamAuthFailed({ provider: "kiro", reason: "refused" })
const unreachable = new UpstreamAuthFailed({ provider: "kiro", reason: "unreachable" })
const malformed = new UpstreamAuthFailed({ provider: "kiro", reason: "malformed" })

const requestOf = (endpoints: KiroAuthEndpoints, signIn: KiroSignIn): { url: URL; body: string } =>
  signIn.authMethod === "social"
    ? { url: endpoints.social, body: JSON.stringify({ refreshToken: signIn.refreshToken }) }
    : {
      url: endpoints.idc ?? new URL(`https://oidc.${signIn.region ?? DEFAULT_REGION}.amazonaws.com/token`),
      body: JSON.stringify({
        clientId: signIn.clientId,
        clientSecret: signIn.clientSecret,
        grantType: "refresh_token",
        refreshToken: signIn.refreshToken
      })
    }

/**
 * One refresh call. Whatever goes wrong, the caller learns only which of
 * three things happened: the provider's answer may quote the token it
 * refused, so neither it nor the request reaches a log or an error body.
 */
export const refreshSignIn = (
  upstream: UpstreamClient["Service"],
  endpoints: KiroAuthEndpoints,
  signIn: KiroSignIn
): Effect.Effect<MintedToken, UpstreamAuthFailed> => {
  const { body, url } = requestOf(endpoints, signIn)
  return upstream.buffered({
    provider: "kiro",
    origin: url.origin,
    path: url.pathname + url.search,
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: new TextEncoder().encode(body)
  }).pipe(
    // The refresh runs under the vault's lease for the sign-in (src/vault/CachedProviderKeys.ts), which
    // outlives it: cut here rather than at the upstream client's timeout for model calls.
    Effect.timeout(REFRESH_TIMEOUT),
    Effect.mapError(() => unreachable),
    Effect.flatMap((response) => {
      if (response.status < 200 || response.status > 299) {
        // Only a 4xx (but 408 and 429) says the sign-in itself is refused. A 5xx, a timeout or a rate
        // limit is the service failing for now: telling the user to store a new sign-in would have them
        // throw away a working refresh token.
        const passing = response.status >= 500 || response.status === 408 || response.status === 429
        return Effect.andThen(
          Effect.logWarning(passing ? "kiro sign-in service failing" : "kiro sign-in refresh refused", {
            status: response.status,
            method: signIn.authMethod
          }),
          Effect.fail(passing ? unreachable : refusedBy)
        )
      }
      const answer = decodeAnswer(response.body.toString("utf8"))
      if (Exit.isFailure(answer)) return Effect.fail(malformed)
      return Effect.succeed<MintedToken>({
        accessToken: Redacted.make(answer.value.accessToken),
        expiresInSeconds: Math.min(answer.value.expiresIn, MAX_EXPIRES_IN_SECONDS),
        refreshToken: answer.value.refreshToken,
        profileArn: answer.value.profileArn
      })
    })
  )
}
