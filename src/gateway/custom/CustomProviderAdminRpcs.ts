import { Context, Effect, Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import type { RpcClient, RpcClientError } from "effect/rpc"
import { Organizations } from "../../orgs/Organizations.ts"
import { OrgUnknown } from "../keys/ServiceKeyErrors.ts"
import { CustomProvider, CustomProviderInvalid, CustomProviderNotFound, NewCustomProvider } from "./CustomProvider.ts"
import { CustomProviders } from "./CustomProviders.ts"

/** Every refusal of a custom-provider admin operation; `message` is one line fit for a terminal. */
export class CustomProviderAdminError extends Schema.TaggedError<CustomProviderAdminError>()("CustomProviderAdminError", {
  reason: Schema.Union([OrgUnknown, CustomProviderNotFound, CustomProviderInvalid])
}) {
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

const refuse = (reason: CustomProviderAdminError["reason"]) => Effect.fail(new CustomProviderAdminError({ reason }))

/** Handlers for `CustomProviderAdminRpcs`; need `Organizations` and `CustomProviders`. */
export const CustomProviderAdminRpcHandlers = CustomProviderAdminRpcs.toLayer(Effect.gen(function*() {
  const custom = yield* CustomProviders
  const orgs = yield* Organizations

  const existingOrg = (org: string) =>
    orgs.show(org).pipe(
      Effect.map((o) => o.uuid as string),
      Effect.catchTag("OrgError", () => refuse(new OrgUnknown({ uuid: org })))
    )
  const reasonOf = (error: { readonly reason: CustomProviderAdminError["reason"] }) =>
    new CustomProviderAdminError({ reason: error.reason })

  return CustomProviderAdminRpcs.of({
    CustomProviderAdd: Effect.fnUntraced(function*({ org, provider }) {
      return yield* custom.add(yield* existingOrg(org), provider).pipe(Effect.mapError(reasonOf))
    }),
    CustomProviderList: Effect.fnUntraced(function*({ org }) {
      return yield* custom.list(yield* existingOrg(org))
    }),
    CustomProviderRemove: Effect.fnUntraced(function*({ org, slug }) {
      yield* custom.remove(yield* existingOrg(org), slug).pipe(Effect.mapError(reasonOf))
    })
  })
}))
