import { Context, Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import type { RpcClient, RpcClientError } from "effect/rpc"
import { PROVIDER_SLUGS } from "../providers/ProviderSlugs.ts"
import { OrgUnknown, ServiceKeyExists } from "../servicekeys/ServiceKeyErrors.ts"

export class UnknownProvider extends Schema.TaggedError<UnknownProvider>()("UnknownProvider", {
  provider: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return `unknown provider ${JSON.stringify(this.provider)} (known: ${
      PROVIDER_SLUGS.join(", ")
    }, or a custom provider of the organization)`
  }
}

export class InvalidProviderKey extends Schema.TaggedError<InvalidProviderKey>()("InvalidProviderKey", {
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return this.reason
  }
}

/** Every refusal of a gateway admin operation; `message` is one line fit for a terminal. */
export class GatewayAdminError extends Schema.TaggedError<GatewayAdminError>()("GatewayAdminError", {
  reason: Schema.Union([OrgUnknown, ServiceKeyExists, UnknownProvider, InvalidProviderKey])
}) {
  override get message() {
    return this.reason.message
  }
}

/** Secrets cross the socket as plain strings but are `Redacted` on both ends, so no log or trace shows them. */
const Secret = Schema.RedactedFromValue(Schema.String)

export const ProviderKeyListing = Schema.Struct({
  provider: Schema.String,
  createdAt: Schema.DateTimeUtcFromString,
  updatedAt: Schema.DateTimeUtcFromString
})
export type ProviderKeyListing = typeof ProviderKeyListing.Type

/**
 * Gateway key administration, served on the admin socket. Service keys come
 * back once (create/rotate); provider keys go in and never come out.
 */
export class GatewayAdminRpcs extends RpcGroup.make(
  Rpc.make("GatewayServiceKeyCreate", {
    payload: { org: Schema.String },
    success: Schema.Struct({ key: Secret }),
    error: GatewayAdminError
  }),
  Rpc.make("GatewayServiceKeyRotate", {
    payload: { org: Schema.String },
    success: Schema.Struct({ key: Secret }),
    error: GatewayAdminError
  }),
  Rpc.make("GatewayProviderKeySet", {
    payload: { org: Schema.String, provider: Schema.String, key: Secret },
    error: GatewayAdminError
  }),
  Rpc.make("GatewayProviderKeyDelete", {
    payload: { org: Schema.String, provider: Schema.String },
    success: Schema.Struct({ deleted: Schema.Boolean }),
    error: GatewayAdminError
  }),
  Rpc.make("GatewayProviderKeyList", {
    payload: { org: Schema.String },
    success: Schema.Array(ProviderKeyListing),
    error: GatewayAdminError
  }),
  Rpc.make("GatewayInferenceLogSet", {
    payload: { org: Schema.String, enabled: Schema.Boolean },
    error: GatewayAdminError
  })
) {}

/**
 * The client the `bin/vdb gateway` commands call. Any client of a group that
 * includes `GatewayAdminRpcs` fits (e.g. the merged `AdminClient`).
 */
export class GatewayAdminClient extends Context.Service<
  GatewayAdminClient,
  RpcClient.RpcClient<RpcGroup.Rpcs<typeof GatewayAdminRpcs>, RpcClientError.RpcClientError>
>()("vdb/gateway/GatewayAdminClient") {}
