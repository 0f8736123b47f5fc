import { DateTime, Effect, Redacted, Result } from "effect"
import { InferenceLog } from "../inference/InferenceLog.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { CustomProviders } from "../providers/custom/CustomProviders.ts"
import { storeProviderKey } from "../providers/custom/KnownProvider.ts"
import { isProviderSlug } from "../providers/ProviderSlugs.ts"
import { ServiceKeys } from "../servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../vault/ProviderKeys.ts"
import { acceptProviderKey } from "../vault/ProviderKeyValue.ts"
import { existingOrg as knownOrg } from "./AdminOrg.ts"
import { GatewayAdminError, GatewayAdminRpcs, InvalidProviderKey, UnknownProvider } from "./GatewayAdminRpcs.ts"

const refuse = (reason: GatewayAdminError["reason"]) => Effect.fail(new GatewayAdminError({ reason }))

/** Handlers for `GatewayAdminRpcs`; needs `ServiceKeys`, `ProviderKeys`, `Organizations` and `CustomProviders`. */
export const GatewayAdminRpcHandlers = GatewayAdminRpcs.toLayer(Effect.gen(function*() {
  const serviceKeys = yield* ServiceKeys
  const providerKeys = yield* ProviderKeys
  const orgs = yield* Organizations
  const inferenceLog = yield* InferenceLog
  const custom = yield* CustomProviders

  const existingOrg = (org: string) =>
    knownOrg(orgs, org).pipe(Effect.mapError((reason) => new GatewayAdminError({ reason })))

  /** A built-in slug, or one of the organization's own custom providers. */
  const knownProvider = (org: string, provider: string) =>
    isProviderSlug(provider)
      ? Effect.succeed(provider)
      : custom.lookup(org, provider).pipe(
        Effect.orElseSucceed(() => undefined),
        Effect.flatMap((route) =>
          route !== undefined ? Effect.succeed(provider) : refuse(new UnknownProvider({ provider }))
        )
      )

  return GatewayAdminRpcs.of({
    GatewayServiceKeyCreate: ({ org }) =>
      serviceKeys.create(org).pipe(
        Effect.map(({ key }) => ({ key: Redacted.make(key) })),
        Effect.mapError((reason) => new GatewayAdminError({ reason }))
      ),
    GatewayServiceKeyRotate: ({ org }) =>
      serviceKeys.issue(org).pipe(
        Effect.map(({ key }) => ({ key: Redacted.make(key) })),
        Effect.mapError((reason) => new GatewayAdminError({ reason }))
      ),
    GatewayProviderKeySet: Effect.fnUntraced(function*({ key, org, provider }) {
      const uuid = yield* existingOrg(org)
      const slug = yield* knownProvider(uuid, provider)
      const value = acceptProviderKey(slug, key)
      if (Result.isFailure(value)) return yield* refuse(new InvalidProviderKey({ reason: value.failure }))
      if (!(yield* storeProviderKey(custom, providerKeys, uuid, slug, value.success))) {
        return yield* refuse(new UnknownProvider({ provider }))
      }
    }),
    GatewayInferenceLogSet: Effect.fnUntraced(function*({ enabled, org }) {
      yield* inferenceLog.setEnabled(yield* existingOrg(org), enabled)
    }),
    GatewayProviderKeyDelete: Effect.fnUntraced(function*({ org, provider }) {
      const uuid = yield* existingOrg(org)
      const slug = yield* knownProvider(uuid, provider)
      return { deleted: yield* providerKeys.remove(uuid, slug) }
    }),
    GatewayProviderKeyList: Effect.fnUntraced(function*({ org }) {
      const uuid = yield* existingOrg(org)
      const entries = yield* providerKeys.list(uuid)
      return entries.map((e) => ({
        provider: e.provider,
        createdAt: DateTime.fromDateUnsafe(e.createdAt),
        updatedAt: DateTime.fromDateUnsafe(e.updatedAt)
      }))
    })
  })
}))
