import { Context, Effect, Layer } from "effect"
import type { PolicyRefusal } from "../../../schema/PolicyRefusal.ts"
import type { Provider } from "../../providers/ProviderCatalog.ts"
import type { BackendUnavailable } from "../../servicekeys/ServiceKeys.ts"
import { allowVerdict, type InboundRequest, type Verdict } from "./Verdict.ts"

/**
 * The decision step of the request path, between authentication and the
 * relay: sealed blocks, provider / model / client policy, tool / MCP / skill
 * policy and strip rules, then guardrails (`Firewall.ts` composes them).
 * Policy must fail closed: an unreachable backend is `BackendUnavailable`.
 */
export class Inspection extends Context.Service<Inspection, {
  inspect(request: InboundRequest): Effect.Effect<Verdict, PolicyRefusal | BackendUnavailable>
  /** Provider-level policy only (allow/deny list, platform-wide disable), for routes without a model (nonces). */
  admitProvider(orgUuid: string, provider: Provider): Effect.Effect<void, PolicyRefusal | BackendUnavailable>
  /** The catalog models the organization may see (`GET .../models`); refuses on an explicit provider deny. */
  visibleModels(
    orgUuid: string,
    provider: Provider
  ): Effect.Effect<ReadonlyArray<string>, PolicyRefusal | BackendUnavailable>
}>()("vdb/gateway/Inspection") {
  /** No policy and no rules: everything is allowed and forwarded unchanged (the relay's own tests and benchmark). */
  static readonly allowAll = Layer.succeed(Inspection)(Inspection.of({
    inspect: () => Effect.succeed(allowVerdict),
    admitProvider: () => Effect.void,
    visibleModels: (_orgUuid, provider) => Effect.succeed(provider.spec.models)
  }))
}
