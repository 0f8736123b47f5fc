import { Context, DateTime, Effect, Redacted, Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import type { RpcClient, RpcClientError } from "effect/rpc"
import { InferenceLog } from "./InferenceLog.ts"
import { CustomProviders } from "./custom/CustomProviders.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { ProviderKeys } from "../vault/ProviderKeys.ts"
import { isProviderSlug, PROVIDER_SLUGS } from "./keys/ProviderSlugs.ts"
import { OrgUnknown, ServiceKeyExists } from "./keys/ServiceKeyErrors.ts"
import { SERVICE_KEY_PREFIX } from "./keys/ServiceKeyFormat.ts"
import { ServiceKeys } from "./ServiceKeys.ts"
import { providerKeyRefusal } from "./kiro/KiroSignInCheck.ts"

export class UnknownProvider extends Schema.TaggedError<UnknownProvider>()("UnknownProvider", {
  provider: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return `unknown provider ${JSON.stringify(this.provider)} (known: ${PROVIDER_SLUGS.join(", ")}, or a custom provider of the organization)`
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

  /** The organization's canonical UUID; any unknown or malformed UUID is `OrgUnknown`. */
  const existingOrg = (org: string) =>
    orgs.show(org).pipe(
      Effect.map((o) => o.uuid as string),
      Effect.catchTag("OrgError", () => refuse(new OrgUnknown({ uuid: org })))
    )

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
