import { Exit, Schema } from "effect"

/** An AWS region name; it becomes part of a host name, so nothing else may pass. */
const Region = Schema.String.check(Schema.isPattern(/^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$/))

/**
 * What the vault holds for the `kiro` provider (spec 2): the Kiro sign-in,
 * from which the gateway mints short-lived access tokens. `social` refreshes
 * at Kiro's own auth service; `idc` (IAM Identity Center, Builder ID)
 * through SSO OIDC `CreateToken`, which needs the registered client's id and
 * secret.
 */
/** A refresh token with something in it: only spaces was accepted, and failed at the first request. */
const RefreshToken = Schema.NonEmptyString.check(
  Schema.makeFilter((s: string) => s.trim() !== "" || "the refreshToken is blank")
)

/**
 * An access token is sent as `Authorization: Bearer <token>`: visible ASCII only. One that is not
 * could never be sent, and stored with a far expiry it kept a working sign-in from refreshing.
 */
export const KiroAccessToken = Schema.NonEmptyString.check(
  Schema.makeFilter((s: string) => /^[\x21-\x7e]+$/.test(s) || "the accessToken must be visible ASCII characters")
)

export const KiroSignIn = Schema.Struct({
  refreshToken: RefreshToken,
  authMethod: Schema.Literals(["social", "idc"]),
  clientId: Schema.optionalKey(Schema.NonEmptyString),
  clientSecret: Schema.optionalKey(Schema.NonEmptyString),
  profileArn: Schema.optionalKey(Schema.NonEmptyString),
  region: Schema.optionalKey(Region),
  /**
   * The access token last minted from this sign-in and when it expires (ISO 8601), as Kiro's own
   * token file keeps them. The gateway writes both back with every refresh, so another process
   * sharing the database uses that token instead of refreshing again; one given with the sign-in is
   * used until it expires. An `expiresAt` that is no date leaves the token unused.
   */
  accessToken: Schema.optionalKey(KiroAccessToken),
  expiresAt: Schema.optionalKey(Schema.String)
})
export type KiroSignIn = typeof KiroSignIn.Type

const decodeSignIn = Schema.decodeUnknownExit(Schema.fromJsonString(KiroSignIn))

/** One line, and never the value: a sign-in is a secret, so no decoder message (which quotes input) is shown. */
export const KIRO_SIGN_IN_EXPECTED =
  `the kiro key must be the sign-in as JSON: {"refreshToken": "...", "authMethod": "social" | "idc", "clientId"?, "clientSecret"?, "profileArn"?, "region"?, "accessToken"?, "expiresAt"? (strings)}`
export const KIRO_IDC_NEEDS_CLIENT = `a kiro "idc" sign-in needs "clientId" and "clientSecret"`

/** The sign-in, or the one-line reason it is refused. */
export const parseKiroSignIn = (text: string): KiroSignIn | { readonly refused: string } => {
  const exit = decodeSignIn(text)
  if (Exit.isFailure(exit)) return { refused: KIRO_SIGN_IN_EXPECTED }
  const signIn = exit.value
  if (signIn.authMethod === "idc" && (signIn.clientId === undefined || signIn.clientSecret === undefined)) {
    return { refused: KIRO_IDC_NEEDS_CLIENT }
  }
  return signIn
}

export const isRefused = (parsed: KiroSignIn | { readonly refused: string }): parsed is { readonly refused: string } =>
  "refused" in parsed
