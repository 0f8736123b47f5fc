import { DateTime, Effect, Redacted } from "effect"
import { Organizations } from "../orgs/Organizations.ts"
import { ProviderKeys } from "../vault/ProviderKeys.ts"
import { existingOrg as knownOrg } from "./AdminOrg.ts"
import { CustomProviders } from "./custom/CustomProviders.ts"
import { GatewayAdminError, GatewayAdminRpcs, InvalidProviderKey, UnknownProvider } from "./GatewayAdminRpcs.ts"
import { InferenceLog } from "./InferenceLog.ts"
import { isProviderSlug } from "./keys/ProviderSlugs.ts"
import { SERVICE_KEY_PREFIX } from "./keys/ServiceKeyFormat.ts"
import { providerKeyRefusal } from "./kiro/KiroSignInCheck.ts"
import { ServiceKeys } from "./ServiceKeys.ts"

/** Generous for any API key or credential blob; anything larger is a mistake (a file piped in). */
const MAX_PROVIDER_KEY_BYTES = 16 * 1024

const refuse = (reason: GatewayAdminError["reason"]) => Effect.fail(new GatewayAdminError({ reason }))

/** Handlers for `GatewayAdminRpcs`; needs `ServiceKeys`, `ProviderKeys`, `Organizations` and `CustomProviders`. */
export const GatewayAdminRpcHandlers = GatewayAdminRpcs.toLayer(Effect.gen(function*() {
  const serviceKeys = yield* ServiceKeys
  const providerKeys = yield* ProviderKeys
  const orgs = yield* Organizations
  const inferenceLog = yield* InferenceLog
  const custom = yield* CustomProviders

  const existingOrg = (org: string) => knownOrg(orgs, org).pipe(Effect.mapError((reason) => new GatewayAdminError({ reason })))

  /** A built-in slug, or one of the organization's own custom providers. */
  const knownProvider = (org: string, provider: string) =>
    isProviderSlug(provider)
      ? Effect.succeed(provider)
      : custom.lookup(org, provider).pipe(
        Effect.orElseSucceed(() => undefined),
        Effect.flatMap((route) => route !== undefined ? Effect.succeed(provider) : refuse(new UnknownProvider({ provider })))
      )

  const acceptableKey = (key: Redacted.Redacted<string>) => {
    const text = Redacted.value(key).trim()
    if (text.length === 0) return refuse(new InvalidProviderKey({ reason: "the provider key is empty" }))
    if (Buffer.byteLength(text) > MAX_PROVIDER_KEY_BYTES) {
      return refuse(new InvalidProviderKey({ reason: `the provider key is longer than ${MAX_PROVIDER_KEY_BYTES} bytes` }))
    }
    if (text.startsWith(SERVICE_KEY_PREFIX)) {
      return refuse(new InvalidProviderKey({ reason: "that is a vdb service key, not a provider key" }))
    }
    return Effect.succeed(Redacted.make(text))
  }

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
      const value = yield* acceptableKey(key)
      const refused = providerKeyRefusal(slug, value)
      if (refused !== undefined) return yield* refuse(new InvalidProviderKey({ reason: refused }))
      yield* providerKeys.set(uuid, slug, value)
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
