import { Effect, Layer } from "effect"
import { PolicyEntryInvalid } from "../../schema/GatewayPolicy.ts"
import { Guardrails } from "../guardrails/Guardrails.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { makeDryRun } from "../policies/FirewallCheck.ts"
import { Policies, providersNamed } from "../policies/Policies.ts"
import { CustomProviders } from "../providers/custom/CustomProviders.ts"
import { unknownProviderReason } from "../providers/custom/KnownProvider.ts"
import { existingOrg as knownOrg } from "./AdminOrg.ts"
import { FirewallAdminError, FirewallAdminRpcs, FirewallBackendUnavailable } from "./FirewallAdminRpcs.ts"

const refuse = (reason: FirewallAdminError["reason"]) => Effect.fail(new FirewallAdminError({ reason }))
const reasonOf = (error: { readonly reason: FirewallAdminError["reason"] }) =>
  new FirewallAdminError({ reason: error.reason })

/**
 * Handlers for `FirewallAdminRpcs`; need `Organizations` and `Policies`.
 * `Guardrails.layer` is provided here (the server's gateway routes use the
 * same layer, so one process builds one instance).
 */
export const FirewallAdminRpcHandlers = FirewallAdminRpcs.toLayer(Effect.gen(function*() {
  const guardrails = yield* Guardrails
  const policies = yield* Policies
  const orgs = yield* Organizations
  const custom = yield* CustomProviders
  const dryRun = yield* makeDryRun

  const existingOrg = (org: string) =>
    knownOrg(orgs, org).pipe(Effect.mapError((reason) => new FirewallAdminError({ reason })))

  return FirewallAdminRpcs.of({
    FirewallRuleAdd: Effect.fnUntraced(function*({ org, rule }) {
      return yield* guardrails.create(yield* existingOrg(org), rule).pipe(Effect.mapError(reasonOf))
    }),
    FirewallRuleList: Effect.fnUntraced(function*({ org }) {
      return yield* guardrails.list(yield* existingOrg(org)).pipe(Effect.mapError(reasonOf))
    }),
    FirewallRuleRemove: Effect.fnUntraced(function*({ org, uuid }) {
      yield* guardrails.remove(yield* existingOrg(org), uuid).pipe(Effect.mapError(reasonOf))
    }),
    FirewallRuleSetEnabled: Effect.fnUntraced(function*({ enabled, org, uuid }) {
      return yield* guardrails.setEnabled(yield* existingOrg(org), uuid, enabled).pipe(Effect.mapError(reasonOf))
    }),
    FirewallPolicyAdd: Effect.fnUntraced(function*({ entry, org }) {
      const known = yield* existingOrg(org)
      // The same refusal as the management API's: an entry for a provider no route serves never applies.
      for (const slug of providersNamed(entry)) {
        const unknown = yield* unknownProviderReason(custom, known, slug).pipe(
          Effect.mapError(() => new FirewallAdminError({ reason: new FirewallBackendUnavailable() }))
        )
        if (unknown !== undefined) return yield* refuse(new PolicyEntryInvalid({ reason: unknown }))
      }
      return yield* policies.add(known, entry).pipe(Effect.mapError(reasonOf))
    }),
    FirewallPolicyList: Effect.fnUntraced(function*({ org }) {
      return yield* policies.list(yield* existingOrg(org)).pipe(Effect.mapError(reasonOf))
    }),
    FirewallPolicyRemove: Effect.fnUntraced(function*({ org, uuid }) {
      yield* policies.remove(yield* existingOrg(org), uuid).pipe(Effect.mapError(reasonOf))
    }),
    FirewallCheck: Effect.fnUntraced(function*({ check, org }) {
      return yield* dryRun(yield* existingOrg(org), check).pipe(
        Effect.catchTags({
          GuardrailError: (e) => Effect.fail(reasonOf(e)),
          GuardrailsUnavailable: (e) => refuse(e),
          BackendUnavailable: () => refuse(new FirewallBackendUnavailable())
        })
      )
    })
  })
})).pipe(
  Layer.provide(Guardrails.layer),
  // Its settings (`VDB_GATEWAY_FAIL_OPEN`, `VDB_GATEWAY_DISABLED_PROVIDERS`, the cache TTL) are read by the
  // gateway at start too, where a bad value stops the server with its message; here it is a defect.
  Layer.orDie
)
