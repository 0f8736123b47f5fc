import { Schema } from "effect"

/**
 * The gateway's own refusals and failures. Each carries its HTTP status (its
 * `httpApiStatus`, read with `statusOf`) and the `code` clients see; the two
 * dialect encoders (OpenAI and Anthropic envelopes) are the only place that
 * renders them.
 */

export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()("InvalidApiKey", {}, { httpApiStatus: 401 }) {
  get code() {
    return "invalid_api_key"
  }
  // One message for every 401 case, so a caller cannot probe which organizations exist.
  override get message() {
    return "invalid API key"
  }
}

export class GatewayUnknownProvider extends Schema.TaggedError<GatewayUnknownProvider>()("GatewayUnknownProvider", {
  provider: Schema.String
}, { httpApiStatus: 404 }) {
  get code() {
    return "unknown_provider"
  }
  override get message() {
    return `unknown provider: ${this.provider}`
  }
}

export class UnsupportedApi extends Schema.TaggedError<UnsupportedApi>()("UnsupportedApi", {
  provider: Schema.String,
  surface: Schema.String,
  /** The route(s) that serve this provider instead. */
  use: Schema.String
}, { httpApiStatus: 404 }) {
  get code() {
    return "unsupported_api"
  }
  override get message() {
    return `provider ${this.provider} does not serve the ${this.surface} API; use ${this.use}`
  }
}

export class RouteNotFound extends Schema.TaggedError<RouteNotFound>()("RouteNotFound", {}, { httpApiStatus: 404 }) {
  get code() {
    return "not_found"
  }
  override get message() {
    return "no such route"
  }
}

/** A path segment longer than the router takes (`ROUTER_CONFIG`): no route can match it, whatever it names. */
export class UriTooLong extends Schema.TaggedError<UriTooLong>()("UriTooLong", {
  limit: Schema.Number
}, { httpApiStatus: 414 }) {
  get code() {
    return "uri_too_long"
  }
  override get message() {
    return `a path segment is longer than ${this.limit} characters`
  }
}

export const InvalidRequestReason = Schema.Literals([
  "could not read request body",
  "invalid JSON body",
  "model is required",
  "count must be an integer from 1 to 64"
])
export type InvalidRequestReason = typeof InvalidRequestReason.Type

const invalidRequestCodes: Record<InvalidRequestReason, string> = {
  "could not read request body": "unreadable_body",
  "invalid JSON body": "invalid_json",
  "model is required": "model_required",
  "count must be an integer from 1 to 64": "invalid_count"
}

export class GatewayInvalidRequest extends Schema.TaggedError<GatewayInvalidRequest>()("GatewayInvalidRequest", {
  reason: InvalidRequestReason
}, { httpApiStatus: 400 }) {
  get code() {
    return invalidRequestCodes[this.reason]
  }
  override get message() {
    return this.reason
  }
}

export class RequestTooLarge
  extends Schema.TaggedError<RequestTooLarge>()("RequestTooLarge", {}, { httpApiStatus: 413 })
{
  get code() {
    return "request_too_large"
  }
  override get message() {
    return "request body exceeds 8 MiB"
  }
}

/**
 * A body sent with a `Content-Encoding` (gzip, br, …). The gateway inspects and forwards the JSON
 * it reads, and reads none compressed: refused at once rather than parsed as garbage (RFC 9110
 * 15.5.16; the response's `accept-encoding: identity` says what is taken).
 */
export class UnsupportedContentEncoding
  extends Schema.TaggedError<UnsupportedContentEncoding>()("UnsupportedContentEncoding", {}, {
    httpApiStatus: 415
  })
{
  get code() {
    return "unsupported_content_encoding"
  }
  override get message() {
    return "request bodies are read uncompressed: send the JSON without a Content-Encoding"
  }
}

export class UpstreamUnreachable extends Schema.TaggedError<UpstreamUnreachable>()("UpstreamUnreachable", {
  provider: Schema.String
}, { httpApiStatus: 502 }) {
  get code() {
    return "upstream_unreachable"
  }
  override get message() {
    return `provider ${this.provider} could not be reached`
  }
}

export class UpstreamTimeout extends Schema.TaggedError<UpstreamTimeout>()("UpstreamTimeout", {
  provider: Schema.String
}, { httpApiStatus: 502 }) {
  get code() {
    return "upstream_timeout"
  }
  override get message() {
    return `provider ${this.provider} did not answer within 120 seconds`
  }
}

/** A custom provider whose endpoint is not https or resolves to a non-public address: nothing was sent. */
export class UpstreamBlocked extends Schema.TaggedError<UpstreamBlocked>()("UpstreamBlocked", {
  provider: Schema.String
}, { httpApiStatus: 502 }) {
  get code() {
    return "upstream_blocked"
  }
  // The resolved addresses stay in the server log: the caller learns nothing about the network behind the gateway.
  override get message() {
    return `provider ${this.provider} resolves to a non-public address; the request was not sent`
  }
}

/** A custom provider answered with a 3xx: redirects are never followed. */
export class UpstreamRedirect extends Schema.TaggedError<UpstreamRedirect>()("UpstreamRedirect", {
  provider: Schema.String
}, { httpApiStatus: 502 }) {
  get code() {
    return "upstream_redirect"
  }
  override get message() {
    return `provider ${this.provider} answered with a redirect, which the gateway does not follow`
  }
}

/** A custom provider asked for the Kiro API (spec 2: a 400, unlike a built-in's 404 `unsupported_api`). */
export class UnsupportedKiroApi extends Schema.TaggedError<UnsupportedKiroApi>()("UnsupportedKiroApi", {
  provider: Schema.String
}, { httpApiStatus: 400 }) {
  get code() {
    return "unsupported_api"
  }
  override get message() {
    return `provider ${this.provider} does not serve the Kiro API`
  }
}

/** The Kiro sign-in in the vault could not be turned into an access token (refused, unreachable or malformed answer). */
export class UpstreamAuthFailed extends Schema.TaggedError<UpstreamAuthFailed>()("UpstreamAuthFailed", {
  provider: Schema.String,
  reason: Schema.Literals(["refused", "unreachable", "malformed"])
}, { httpApiStatus: 502 }) {
  get code() {
    return "upstream_auth_failed"
  }
  // Never the provider's answer: it may echo the token it refused.
  override get message() {
    return this.reason === "refused"
      ? `the ${this.provider} sign-in service refused the stored sign-in; store a new one`
      : this.reason === "unreachable"
      ? `the ${this.provider} sign-in service could not be reached`
      : `the ${this.provider} sign-in service gave an answer without a usable access token`
  }
}

/** The stored provider credential is not what the provider needs (spec 2: "provider credential configuration invalid"). */
export class ProviderCredentialInvalid
  extends Schema.TaggedError<ProviderCredentialInvalid>()("ProviderCredentialInvalid", {
    provider: Schema.String
  }, { httpApiStatus: 502 })
{
  get code() {
    return "provider_credential_invalid"
  }
  // Kiro's sign-in that is not one, or an API key stored before keys were checked that no header can carry.
  override get message() {
    return `the stored ${this.provider} credential cannot be used (not a valid sign-in or key); store a new one`
  }
}

export class NotImplemented extends Schema.TaggedError<NotImplemented>()("NotImplemented", {
  feature: Schema.String
}, { httpApiStatus: 501 }) {
  get code() {
    return "not_implemented"
  }
  override get message() {
    return `${this.feature} is not available yet`
  }
}

export class GatewayInternalError
  extends Schema.TaggedError<GatewayInternalError>()("GatewayInternalError", {}, { httpApiStatus: 500 })
{
  get code() {
    return "internal_error"
  }
  override get message() {
    return "internal error"
  }
}

export type GatewayError =
  | InvalidApiKey
  | GatewayUnknownProvider
  | UnsupportedApi
  | RouteNotFound
  | UriTooLong
  | GatewayInvalidRequest
  | RequestTooLarge
  | UnsupportedContentEncoding
  | UpstreamUnreachable
  | UpstreamTimeout
  | UpstreamBlocked
  | UpstreamRedirect
  | UnsupportedKiroApi
  | UpstreamAuthFailed
  | ProviderCredentialInvalid
  | NotImplemented
  | GatewayInternalError
