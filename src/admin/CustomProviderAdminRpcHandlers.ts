import { Effect } from "effect"
import { Organizations } from "../orgs/Organizations.ts"
import { CustomProviders } from "../providers/custom/CustomProviders.ts"
import { existingOrg as knownOrg } from "./AdminOrg.ts"
import { CustomProviderAdminError, CustomProviderAdminRpcs } from "./CustomProviderAdminRpcs.ts"

/** Handlers for `CustomProviderAdminRpcs`; need `Organizations` and `CustomProviders`. */
export const CustomProviderAdminRpcHandlers = CustomProviderAdminRpcs.toLayer(Effect.gen(function*() {
  const custom = yield* CustomProviders
  const orgs = yield* Organizations

  const existingOrg = (org: string) =>
    knownOrg(orgs, org).pipe(Effect.mapError((reason) => new CustomProviderAdminError({ reason })))
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
