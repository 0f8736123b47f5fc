import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { GatewayRoutesWith } from "../../../src/gateway/GatewayRoutes.ts"
import { FirewallLayer } from "../../../src/gateway/pipeline/Firewall.ts"
import { Guardrails } from "../../../src/guardrails/Guardrails.ts"
import { UpstreamClient } from "../../../src/http/UpstreamClient.ts"
import { InferenceLog } from "../../../src/inference/InferenceLog.ts"
import { Nonces } from "../../../src/nonces/Nonces.ts"
import { Policies } from "../../../src/policies/Policies.ts"
import { ProviderCatalog } from "../../../src/providers/ProviderCatalog.ts"
import { ServiceKeys } from "../../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { SecretBoxTest } from "../../support/secrets.ts"
import { type FakeKiro, startFakeKiro } from "./FakeKiro.ts"

export const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
export const SERVICE_KEY = "vdb_sk_testServiceKeyForTheGatewayTests0000000"
export const REFRESH_TOKEN = "aorAAAAAGkiroRefreshTokenForTests0000"
export const PROFILE_ARN = "arn:aws:codewhisperer:us-east-1:111111111111:profile/TESTPROFILE"

export interface KiroGateway {
  readonly url: string
  readonly kiro: FakeKiro
  readonly vault: ProviderKeys["Service"]
  readonly policies: Policies["Service"]
  readonly guardrails: Guardrails["Service"]
  readonly inferenceLog: InferenceLog["Service"]
  close(): Promise<void>
}

/**
 * The gateway as the server composes it (real firewall over in-memory
 * policies and guardrails, the real vault in memory, the real Kiro relay and
 * token minting), with Kiro's API and sign-in service on loopback.
 */
export const startKiroGateway = async (): Promise<KiroGateway> => {
  const kiro = await startFakeKiro()
  const configLayer = ConfigProvider.layer(ConfigProvider.fromUnknown({
    VDB_PROVIDER_KIRO_BASE_URL: kiro.url,
    VDB_PROVIDER_KIRO_AUTH_URL: `${kiro.url}/refreshToken`,
    VDB_GATEWAY_DISABLED_PROVIDERS: ""
  }))
  const nonces = Layer.succeed(Nonces)(Nonces.make((org) => Effect.succeed(Redacted.make(`secret-of-${org}`))))
  const services = Layer.mergeAll(
    Layer.mock(ServiceKeys)({
      verify: (org, key) => Effect.succeed(org === ORG && key === SERVICE_KEY ? "valid" : "invalid")
    }),
    ProviderKeys.layerMemory.pipe(Layer.provide(SecretBoxTest)),
    FirewallLayer.pipe(Layer.provideMerge(Layer.mergeAll(Guardrails.layerMemory, Policies.layerMemory, nonces))),
    InferenceLog.layerMemory,
    ProviderCatalog.layer,
    UpstreamClient.layerWith({ timeout: "10 seconds" })
  )
  const app = HttpRouter.serve(GatewayRoutesWith, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(services),
    Layer.provideMerge(Invalidation.layerMemory),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provide(configLayer)
  )
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(app, scope))
  const { address } = Context.get(context, HttpServer.HttpServer)
  const port = "port" in address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    kiro,
    vault: Context.get(context, ProviderKeys),
    policies: Context.get(context, Policies),
    guardrails: Context.get(context, Guardrails),
    inferenceLog: Context.get(context, InferenceLog),
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await kiro.close()
    }
  }
}

export const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)
