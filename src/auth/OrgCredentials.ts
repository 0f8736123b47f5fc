import type { Redacted } from "effect"

/** The organization's UUID and secret: enough to send its API key or to sign in for a token. */
export interface OrgSecretCredentials {
  readonly orgUuid: string
  readonly secret: Redacted.Redacted<string>
}

/** What `bin/vdb auth login` stores: the `ApiKey` header value, no secret (so no JWT sign-in). */
export interface OrgApiKeyCredentials {
  readonly orgUuid: string
  /** `ApiKey <uuid>:<hex>`. */
  readonly apiKey: Redacted.Redacted<string>
}

/** What a client of the organization's own surfaces (the vulnerability API, the management API) holds. */
export type ClientCredentials = OrgSecretCredentials | OrgApiKeyCredentials

export const hasSecret = (credentials: ClientCredentials): credentials is OrgSecretCredentials =>
  "secret" in credentials
