import { DateTime, Effect, Layer, Result } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { GatewayPolicyEntry, PolicyError } from "../../../schema/GatewayPolicy.ts"
import type { GuardrailError, GuardrailsUnavailable } from "../../../schema/GuardrailRule.ts"
import { ApiKeyAuth } from "../../auth/ApiKeyAuth.ts"
import { CurrentOrg } from "../../auth/CurrentOrg.ts"
import type { BackendUnavailable } from "../../cache/BackendUnavailable.ts"
import { Guardrails } from "../../guardrails/Guardrails.ts"
import { InferenceLog } from "../../inference/InferenceLog.ts"
import { makeDryRun } from "../../policies/FirewallCheck.ts"
import { Policies, providersNamed } from "../../policies/Policies.ts"
import type { CustomProviderError } from "../../providers/custom/CustomProvider.ts"
import { CustomProviders } from "../../providers/custom/CustomProviders.ts"
import { storeProviderKey, unknownProviderReason } from "../../providers/custom/KnownProvider.ts"
import { RateLimiter } from "../../ratelimit/RateLimiter.ts"
import { UsageLog } from "../../usage/UsageLog.ts"
import { ProviderKeys } from "../../vault/ProviderKeys.ts"
import { acceptProviderKey } from "../../vault/ProviderKeyValue.ts"
import { ManageApi } from "./ManageApi.ts"
import { inDialect, ManageInvalidRequest, ManageNotFound } from "./ManageErrors.ts"
import { ManageFallback } from "./ManageFallback.ts"
import { ManageMiddleware } from "./ManageMiddleware.ts"

const invalid = (message: string, code = "invalid_request") => new ManageInvalidRequest({ message, code })

/** A domain refusal in the dialect (another organization's rule is simply not found), with its code. */
const fromGuardrails = (error: GuardrailError) =>
  Effect.fail(
    inDialect(error.reason, error.reason._tag === "GuardrailRuleNotFound" ? "rule_not_found" : "invalid_rule")
  )

const fromPolicies = (error: PolicyError) =>
  Effect.fail(
    inDialect(error.reason, error.reason._tag === "PolicyEntryNotFound" ? "policy_not_found" : "invalid_policy")
  )

/** Where no uuid is named, "not found" cannot happen: only the refusal of bad input remains. */
const invalidOnly = <E extends GuardrailError | PolicyError>(error: E, code: string) =>
  error.reason._tag === "GuardrailRuleInvalid" || error.reason._tag === "PolicyEntryInvalid"
    ? Effect.fail(inDialect(error.reason, code))
    : Effect.die(error)

const unavailable = (error: GuardrailsUnavailable | BackendUnavailable) =>
  error._tag === "GuardrailsUnavailable"
    ? inDialect(error, "guardrails_unavailable")
    : inDialect(error, "backend_unavailable", "policy store unavailable")

const orgUuid = Effect.map(CurrentOrg, (org) => org.uuid)

/** Runs a domain call for the caller's organization, its refusals rendered by `refused`. */
const forOrg =
  <E, Refusal>(refused: (error: E) => Effect.Effect<never, Refusal>) => <A>(f: (org: string) => Effect.Effect<A, E>) =>
    Effect.flatMap(orgUuid, (org) => Effect.catch(f(org), refused))

const GuardrailHandlers = HttpApiBuilder.group(
  ManageApi,
  "guardrails",
  Effect.fn(function*(handlers) {
    const guardrails = yield* Guardrails
    const dryRun = yield* makeDryRun
    const rule = forOrg(fromGuardrails)
    const rules = forOrg((e: GuardrailError) => invalidOnly(e, "invalid_rule"))
    return handlers.handleAll({
      list: () => Effect.map(rules((org) => guardrails.list(org)), (data) => ({ data })),
      create: ({ payload }) => rules((org) => guardrails.create(org, payload)),
      check: ({ payload }) =>
        Effect.flatMap(orgUuid, (org) => dryRun(org, payload)).pipe(
          Effect.catchTags({
            GuardrailError: (e) => invalidOnly(e, "invalid_request"),
            GuardrailsUnavailable: (e) => Effect.fail(unavailable(e)),
            BackendUnavailable: (e) => Effect.fail(unavailable(e))
          })
        ),
      show: ({ params }) => rule((org) => guardrails.show(org, params.uuid)),
      update: ({ params, payload }) => rule((org) => guardrails.update(org, params.uuid, payload)),
      enable: ({ params }) => rule((org) => guardrails.setEnabled(org, params.uuid, true)),
      disable: ({ params }) => rule((org) => guardrails.setEnabled(org, params.uuid, false)),
      remove: ({ params }) => rule((org) => guardrails.remove(org, params.uuid))
    })
  })
)

/** A built-in slug, or one of the organization's own custom providers. */
const knownProvider = (custom: CustomProviders["Service"], org: string, provider: string) =>
  unknownProviderReason(custom, org, provider).pipe(
    Effect.mapError(unavailable),
    Effect.flatMap((reason) =>
      reason === undefined ? Effect.succeed(provider) : Effect.fail(invalid(reason, "unknown_provider"))
    )
  )

const PolicyHandlers = HttpApiBuilder.group(
  ManageApi,
  "policies",
  Effect.fn(function*(handlers) {
    const policies = yield* Policies
    const custom = yield* CustomProviders
    const entry = forOrg(fromPolicies)
    const entries = forOrg((e: PolicyError) => invalidOnly(e, "invalid_policy"))
    return handlers.handleAll({
      list: () =>
        Effect.map(
          entries((org) => policies.list(org)),
          (data): { data: ReadonlyArray<GatewayPolicyEntry> } => ({ data })
        ),
      add: ({ payload }) =>
        Effect.andThen(
          Effect.flatMap(
            orgUuid,
            (org) =>
              Effect.forEach(providersNamed(payload), (slug) => knownProvider(custom, org, slug), { discard: true })
          ),
          entries((org) => policies.add(org, payload))
        ),
      remove: ({ params }) => entry((org) => policies.remove(org, params.uuid))
    })
  })
)

const ProviderKeyHandlers = HttpApiBuilder.group(
  ManageApi,
  "providerKeys",
  Effect.fn(function*(handlers) {
    const providerKeys = yield* ProviderKeys
    const custom = yield* CustomProviders
    return handlers.handleAll({
      list: () =>
        Effect.flatMap(orgUuid, (org) => providerKeys.list(org)).pipe(
          Effect.map((list) => ({
            data: list.map((e) => ({
              provider: e.provider,
              created_at: DateTime.fromDateUnsafe(e.createdAt),
              updated_at: DateTime.fromDateUnsafe(e.updatedAt)
            }))
          }))
        ),
      set: Effect.fnUntraced(function*({ params, payload }) {
        const org = yield* orgUuid
        const provider = yield* knownProvider(custom, org, params.provider)
        const key = acceptProviderKey(provider, payload.key)
        if (Result.isFailure(key)) return yield* invalid(key.failure, "invalid_provider_key")
        if (!(yield* storeProviderKey(custom, providerKeys, org, provider, key.success))) {
          return yield* invalid(
            `unknown provider ${JSON.stringify(provider)}: it was removed while its key was stored`,
            "unknown_provider"
          )
        }
      }),
      remove: Effect.fnUntraced(function*({ params }) {
        const org = yield* orgUuid
        const provider = yield* knownProvider(custom, org, params.provider)
        if (!(yield* providerKeys.remove(org, provider))) {
          return yield* new ManageNotFound({ message: `no ${provider} key is stored`, code: "provider_key_not_found" })
        }
      })
    })
  })
)

const InferenceLogHandlers = HttpApiBuilder.group(
  ManageApi,
  "inferenceLog",
  Effect.fn(function*(handlers) {
    const inferenceLog = yield* InferenceLog
    return handlers.handleAll({
      get: () => Effect.map(Effect.flatMap(orgUuid, (org) => inferenceLog.enabled(org)), (enabled) => ({ enabled })),
      set: ({ payload }) =>
        Effect.flatMap(orgUuid, (org) => inferenceLog.setEnabled(org, payload.enabled)).pipe(
          Effect.as({ enabled: payload.enabled })
        )
    })
  })
)

const CustomProviderHandlers = HttpApiBuilder.group(
  ManageApi,
  "customProviders",
  Effect.fn(function*(handlers) {
    const custom = yield* CustomProviders
    const refused = (error: CustomProviderError) =>
      Effect.fail(
        inDialect(
          error.reason,
          error.reason._tag === "CustomProviderNotFound" ? "custom_provider_not_found" : "invalid_custom_provider"
        )
      )
    return handlers.handleAll({
      list: () => Effect.map(Effect.flatMap(orgUuid, (org) => custom.list(org)), (data) => ({ data })),
      add: ({ payload }) =>
        Effect.flatMap(
          orgUuid,
          (org) =>
            Effect.catch(custom.add(org, payload), (e) => Effect.fail(invalid(e.message, "invalid_custom_provider")))
        ),
      remove: ({ params }) => Effect.flatMap(orgUuid, (org) => Effect.catch(custom.remove(org, params.slug), refused))
    })
  })
)

/**
 * `/manage/v1/...` and `/manage/v1/openapi.json`, without the domain
 * services (`Guardrails`, `Policies`, `ProviderKeys`, `InferenceLog`,
 * `Organizations`, a `SqlClient`, `SecretBox`), so tests can supply their own.
 */
export const ManageRoutesWith = Layer.merge(
  HttpApiBuilder.layer(ManageApi, { openapiPath: "/manage/v1/openapi.json" }),
  ManageFallback
).pipe(
  Layer.provide([GuardrailHandlers, PolicyHandlers, ProviderKeyHandlers, InferenceLogHandlers, CustomProviderHandlers]),
  Layer.provide(ManageMiddleware),
  Layer.provide(ApiKeyAuth.layer),
  // `ApiKeyAuth` comes whole with its usage log, which the manage API itself does not write to.
  Layer.provide([RateLimiter.layer, UsageLog.layer])
)

/**
 * Mounted on the gateway port. `Guardrails.layer` and `Policies.layer` are the
 * instances the firewall uses (layers are shared by identity within one build).
 */
export const ManageRoutes = ManageRoutesWith.pipe(Layer.provide([Guardrails.layer, Policies.layer]))
