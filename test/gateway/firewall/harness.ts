import { ConfigProvider, Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { GuardrailsUnavailable } from "../../../schema/GuardrailRule.ts"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { GatewayRoutesWith } from "../../../src/gateway/GatewayRoutes.ts"
import { FirewallLayer } from "../../../src/gateway/pipeline/Firewall.ts"
import type { DelimiterIntegrityRule, GuardrailOutcome } from "../../../src/guardrails/GuardrailOutcome.ts"
import { Guardrails } from "../../../src/guardrails/Guardrails.ts"
import { UpstreamClient } from "../../../src/http/UpstreamClient.ts"
import { InferenceLog } from "../../../src/inference/InferenceLog.ts"
import { Nonces } from "../../../src/nonces/Nonces.ts"
import { Policies } from "../../../src/policies/Policies.ts"
import { ProviderCatalog } from "../../../src/providers/ProviderCatalog.ts"
import { BackendUnavailable, ServiceKeys } from "../../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { gatewayServer } from "../harness.ts"
import { type FakeUpstream, startFakeUpstream } from "../upstreams/FakeUpstream.ts"

export const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
export const SERVICE_KEY = "vdb_sk_testServiceKeyForTheGatewayTests0000000"

/** What the fakes do; tests flip these per case. */
export interface Controls {
  policyDown: boolean
  guardrailsDown: boolean
  delimiterRules: Array<DelimiterIntegrityRule>
  /** The guardrail outcome for every request (default: allow). */
  outcome: GuardrailOutcome | undefined
  /** What the guardrails were given, for asserting on the body after sealed-block removal and strip. */
  evaluated: Array<{ readonly body: string }>
}

export interface FirewallGateway {
  readonly url: string
  readonly upstream: FakeUpstream
  readonly controls: Controls
  readonly policies: Policies["Service"]
  readonly nonces: Nonces["Service"]
  readonly guardrails: Guardrails["Service"]
  reset(): Promise<void>
  close(): Promise<void>
}

const allow: GuardrailOutcome = { decision: "allow", rules: [], redactions: 0, violations: [] }

/**
 * The gateway with the real firewall step over in-memory policies, real
 * nonces and a scriptable guardrail engine, every provider pointed at one
 * fake upstream.
 */
export const startFirewallGateway = async (
  options: {
    readonly disabledProviders?: string
    /** The guardrail engine itself (in memory) instead of the scriptable fake. */
    readonly realGuardrails?: boolean
  } = {}
): Promise<FirewallGateway> => {
  const upstream = await startFakeUpstream()
  const controls: Controls = {
    policyDown: false,
    guardrailsDown: false,
    delimiterRules: [],
    outcome: undefined,
    evaluated: []
  }
  const config: Record<string, string> = { VDB_GATEWAY_DISABLED_PROVIDERS: options.disabledProviders ?? "" }
  for (const slug of ["openai", "groq", "mistral", "openrouter"]) {
    config[`VDB_PROVIDER_${slug.toUpperCase()}_BASE_URL`] = `${upstream.url}/v1`
  }
  config["VDB_PROVIDER_ANTHROPIC_BASE_URL"] = upstream.url
  const configLayer = ConfigProvider.layer(ConfigProvider.fromUnknown(config))

  const guardrails = options.realGuardrails ? Guardrails.layerMemory : Layer.mock(Guardrails)({
    evaluate: (_org, _surface, body) => {
      if (controls.guardrailsDown) return Effect.fail(new GuardrailsUnavailable())
      controls.evaluated.push({ body: Buffer.from(body).toString("utf8") })
      return Effect.succeed(controls.outcome ?? allow)
    },
    delimiterIntegrity: () =>
      controls.guardrailsDown ? Effect.fail(new GuardrailsUnavailable()) : Effect.succeed(controls.delimiterRules)
  })

  // The real in-memory service, with a switch that makes its backend unreachable.
  const policies = Layer.effect(Policies)(Effect.gen(function*() {
    const real = yield* Policies
    return Policies.of({
      ...real,
      snapshot: (org) =>
        controls.policyDown ? Effect.fail(new BackendUnavailable({ backend: "policy" })) : real.snapshot(org)
    })
  })).pipe(Layer.provide(Policies.layerMemory))

  const nonces = Layer.succeed(Nonces)(Nonces.make((org) => Effect.succeed(Redacted.make(`secret-of-${org}`))))
  const services = Layer.mergeAll(
    Layer.mock(ServiceKeys)({
      verify: (org, key) => Effect.succeed(org === ORG && key === SERVICE_KEY ? "valid" : "invalid")
    }),
    Layer.mock(ProviderKeys)({ get: () => Effect.succeed(Redacted.make("sk-provider")) }),
    FirewallLayer.pipe(Layer.provideMerge(Layer.mergeAll(guardrails, policies, nonces)), Layer.provide(configLayer)),
    InferenceLog.layerMemory,
    ProviderCatalog.layer.pipe(Layer.provide(configLayer)),
    UpstreamClient.layerWith({ timeout: "10 seconds" })
  )
  const app = HttpRouter.serve(GatewayRoutesWith, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(services),
    Layer.provideMerge(Invalidation.layerMemory),
    // The production path: inference requests answered below the router.
    Layer.provideMerge(gatewayServer("listener"))
  )
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(app, scope))
  const { address } = Context.get(context, HttpServer.HttpServer)
  const port = "port" in address ? address.port : 0
  const policyService = Context.get(context, Policies)
  return {
    url: `http://127.0.0.1:${port}`,
    upstream,
    controls,
    policies: policyService,
    nonces: Context.get(context, Nonces),
    guardrails: Context.get(context, Guardrails),
    reset: async () => {
      upstream.reset()
      Object.assign(controls, { policyDown: false, guardrailsDown: false, delimiterRules: [], outcome: undefined })
      controls.evaluated.length = 0
      for (const entry of await Effect.runPromise(policyService.list(ORG))) {
        await Effect.runPromise(policyService.remove(ORG, entry.uuid))
      }
    },
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await upstream.close()
    }
  }
}

/** Runs a service call from a plain async test. */
export const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)
