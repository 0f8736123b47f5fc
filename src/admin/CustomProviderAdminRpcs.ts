import { Context, Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import type { RpcClient, RpcClientError } from "effect/rpc"
import {
  CustomProvider,
  CustomProviderInvalid,
  CustomProviderNotFound,
  NewCustomProvider
} from "../providers/custom/CustomProvider.ts"
import { OrgUnknown } from "../servicekeys/ServiceKeyErrors.ts"

/** Every refusal of a custom-provider admin operation; `message` is one line fit for a terminal. */
export class CustomProviderAdminError
  extends Schema.TaggedError<CustomProviderAdminError>()("CustomProviderAdminError", {
    reason: Schema.Union([OrgUnknown, CustomProviderNotFound, CustomProviderInvalid])
  })
{
  override get message() {
    return this.reason.message
  }
}

/**
 * Custom providers on the admin socket, for `bin/vdb gateway custom-provider
 * add|list|remove`: the same service as the management HttpApi, for any
 * organization (the socket's file mode is the access control).
 */
export class CustomProviderAdminRpcs extends RpcGroup.make(
  Rpc.make("CustomProviderAdd", {
    payload: { org: Schema.String, provider: NewCustomProvider },
    success: CustomProvider,
    error: CustomProviderAdminError
  }),
  Rpc.make("CustomProviderList", {
    payload: { org: Schema.String },
    success: Schema.Array(CustomProvider),
    error: CustomProviderAdminError
  }),
  Rpc.make("CustomProviderRemove", {
    payload: { org: Schema.String, slug: Schema.String },
    error: CustomProviderAdminError
  })
) {}

/** The client the `bin/vdb gateway custom-provider` commands call (the merged `AdminClient` fits). */
export class CustomProviderAdminClient extends Context.Service<
  CustomProviderAdminClient,
  RpcClient.RpcClient<RpcGroup.Rpcs<typeof CustomProviderAdminRpcs>, RpcClientError.RpcClientError>
>()("vdb/gateway/custom/CustomProviderAdminClient") {}
