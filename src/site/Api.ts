import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { schemaStatus } from "../../schema/ErrorStatus.ts"
import { ExpiredUserCode, TooManyWrongCodes, UnknownUserCode, UsedUserCode } from "../device/DeviceError.ts"

/**
 * The web site (spec 3, `{www_url}`): the RFC 8628 device grant, member
 * sessions and the server-rendered sign-in and approval pages. Handlers take
 * the raw request (DeviceHandlers.ts, SessionHandlers.ts, PageHandlers.ts) because the grant's answers are RFC 8628's
 * exact bodies and statuses and the pages are forms; this contract is what the
 * OpenAPI document and a client read.
 */

/** RFC 6749 §5.2 / RFC 8628 §3.5 error body; also used by the site's other JSON endpoints. */
export const OAuthError = Schema.Struct({
  error: Schema.String,
  error_description: Schema.String
})
export type OAuthError = typeof OAuthError.Type

const errorAt = (status: number, description: string) =>
  OAuthError.pipe(HttpApiSchema.status(status)).annotate({ description })

/** Every site JSON answer is `Cache-Control: no-store` (RFC 6749 §5.1), refusals included. */
const NoStore = { "cache-control": Schema.Literal("no-store"), pragma: Schema.Literal("no-cache") }
const noStore = { "cache-control": "no-store", pragma: "no-cache" } as const

type CodeRefusal = Schema.Top & (new() => { readonly message: string }) & {
  readonly Type: { readonly message: string }
}

/**
 * A refusal of a decision on a user code, as `{error, error_description}` with the status its
 * class declares: the handler fails with the domain's error and this is its only rendering.
 */
const refusalOf = <S extends CodeRefusal>(self: S, error: string, description: string) =>
  self.pipe(HttpApiSchema.encodeToWithHeaders({
    body: errorAt(schemaStatus(self), description),
    headers: NoStore
  }, {
    decode: () => new self() as S["Type"],
    encode: (refusal) => ({ body: { error, error_description: refusal.message }, headers: noStore })
  }))

/** The one refusal that says when to come back. */
const TooManyWrongCodesBody = TooManyWrongCodes.pipe(HttpApiSchema.encodeToWithHeaders({
  body: errorAt(schemaStatus(TooManyWrongCodes), "too many wrong codes (Retry-After)"),
  headers: { ...NoStore, "retry-after": Schema.NumberFromString.check(Schema.isInt()) }
}, {
  decode: ({ headers }) => new TooManyWrongCodes({ retryAfter: headers["retry-after"] }),
  encode: (refusal) => ({
    body: { error: "too_many_attempts", error_description: refusal.message },
    headers: { ...noStore, "retry-after": refusal.retryAfter }
  })
}))

export const AuthorizeRequest = Schema.Struct({
  client_name: Schema.optionalKey(
    Schema.String.annotate({
      description: "shown on the approval page, labelled as not verified; default from User-Agent"
    })
  ),
  client_version: Schema.optionalKey(Schema.String)
})

export const DeviceAuthorization = Schema.Struct({
  device_code: Schema.String.annotate({ description: "43 characters, 256 bits; only its SHA-256 is stored" }),
  user_code: Schema.String.annotate({ description: "XXX-XXX from BCDFGHJKLMNPQRSTVWXZ" }),
  verification_uri: Schema.String,
  verification_uri_complete: Schema.String,
  expires_in: Schema.Int,
  interval: Schema.Int
})

export const DEVICE_CODE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"

export const TokenRequest = Schema.Struct({
  grant_type: Schema.optionalKey(
    Schema.String.annotate({ description: `${DEVICE_CODE_GRANT_TYPE} (required in the form-encoded request)` })
  ),
  device_code: Schema.String
})

export const Credential = Schema.Struct({
  type: Schema.Literal("apikey"),
  org_uuid: Schema.String,
  orgUuid: Schema.String,
  api_key: Schema.String.annotate({ description: "the vulnerability API's Authorization value: ApiKey <uuid>:<hex>" })
})

export const UserCodeRequest = Schema.Struct({ user_code: Schema.String })

export const Decision = Schema.Struct({
  status: Schema.Literals(["approved", "denied"]),
  user_code: Schema.String
})

export const SignIn = Schema.Struct({ email: Schema.String, password: Schema.String })

export const SignedIn = Schema.Struct({
  email: Schema.String,
  expires_at: Schema.String.annotate({ description: "ISO 8601; sessions last 12 hours" })
})

const Html = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }))
const Redirect = Schema.Void.pipe(HttpApiSchema.status(303))
const DecisionErrors = [
  errorAt(400, "not JSON"),
  errorAt(403, "cross-origin Origin"),
  errorAt(401, "not signed in"),
  refusalOf(UnknownUserCode, "invalid_user_code", "unknown user code"),
  refusalOf(UsedUserCode, "code_already_used", "already approved or denied"),
  refusalOf(ExpiredUserCode, "expired_token", "expired"),
  TooManyWrongCodesBody
]

export class DeviceGroup extends HttpApiGroup.make("device").add(
  HttpApiEndpoint.post("authorize", "/cli/device/authorize", {
    payload: AuthorizeRequest,
    success: DeviceAuthorization,
    error: [
      errorAt(400, "body is not a JSON object"),
      errorAt(429, "12 calls per 60 s per client address (Retry-After)")
    ]
  }).annotate(OpenApi.Description, "Public. Starts an RFC 8628 device grant."),
  HttpApiEndpoint.post("approve", "/cli/device/approve", {
    payload: UserCodeRequest,
    success: Decision,
    error: DecisionErrors
  })
    .annotate(OpenApi.Description, "Signed-in member (session cookie) approves the grant for their organization."),
  HttpApiEndpoint.post("deny", "/cli/device/deny", {
    payload: UserCodeRequest,
    success: Decision,
    error: DecisionErrors
  })
    .annotate(OpenApi.Description, "Signed-in member refuses the grant."),
  HttpApiEndpoint.post("token", "/cli/device/token", {
    payload: [TokenRequest, TokenRequest.pipe(HttpApiSchema.asFormUrlEncoded())],
    success: Credential,
    error: errorAt(
      400,
      "authorization_pending, slow_down, expired_token, access_denied, invalid_grant, invalid_request, unsupported_grant_type"
    )
  }).annotate(OpenApi.Description, "RFC 8628 §3.4 token poll; the credential is issued once.")
).prefix("/api/site/v1") {}

export class SessionGroup extends HttpApiGroup.make("session").add(
  HttpApiEndpoint.post("signIn", "/session", {
    payload: SignIn,
    success: SignedIn,
    error: [
      errorAt(400, "not JSON"),
      errorAt(401, "wrong email or password"),
      errorAt(403, "cross-origin Origin"),
      errorAt(429, "throttled (Retry-After)")
    ]
  }).annotate(OpenApi.Description, "Sets the vdb_session cookie (HttpOnly, SameSite=Lax, Secure over https)."),
  HttpApiEndpoint.delete("signOut", "/session", { success: HttpApiSchema.NoContent })
    .annotate(OpenApi.Description, "Ends the session and clears the cookie.")
).prefix("/api/site/v1") {}

export class PagesGroup extends HttpApiGroup.make("pages").add(
  HttpApiEndpoint.get("home", "/", { success: Redirect }),
  HttpApiEndpoint.get("login", "/login", { success: Html }),
  HttpApiEndpoint.post("loginForm", "/login", { success: [Html, Redirect] }),
  HttpApiEndpoint.post("logoutForm", "/logout", { success: Redirect }),
  HttpApiEndpoint.get("device", "/device", { success: [Html, Redirect] })
    .annotate(OpenApi.Description, "Enter your code (?code= pre-fills it)."),
  HttpApiEndpoint.post("deviceForm", "/device", { success: Html })
    .annotate(OpenApi.Description, "Shows the approval page for the entered code."),
  HttpApiEndpoint.post("decisionForm", "/device/decision", { success: [Redirect, Html] })
    .annotate(
      OpenApi.Description,
      "Approve or Deny from the approval page; decided, 303 to the result (GET), so a reload posts nothing."
    ),
  HttpApiEndpoint.get("decision", "/device/decision", { success: [Html, Redirect] })
    .annotate(
      OpenApi.Description,
      "The result page (?code=): what the signed-in member decided on that code; 404 page when they did not."
    )
) {}

export class RetiredGroup extends HttpApiGroup.make("retired").add(
  HttpApiEndpoint.get("authCodePoll", "/api/cli/auth-code/poll/:userCode", {
    params: { userCode: Schema.String },
    success: Schema.Void,
    error: errorAt(404, "retired")
  }).annotate(OpenApi.Description, "The retired application host's poll: always 404.")
) {}

export class SiteApi extends HttpApi.make("site")
  .add(DeviceGroup)
  .add(SessionGroup)
  .add(PagesGroup)
  .add(RetiredGroup)
  .annotateMerge(OpenApi.annotations({
    title: "vdb site: device sign-in",
    version: "1.0.0",
    description: "RFC 8628 device authorization grant, member sessions and the approval pages."
  }))
{}
