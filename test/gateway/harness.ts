import { ConfigProvider, Context, type Duration, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { GatewayRoutesWith } from "../../src/gateway/GatewayRoutes.ts"
import { Inspection } from "../../src/gateway/pipeline/Inspection.ts"
import { UpstreamClient } from "../../src/http/UpstreamClient.ts"
import { InferenceLog } from "../../src/inference/InferenceLog.ts"
import { Nonces } from "../../src/nonces/Nonces.ts"
import { ProviderCatalog } from "../../src/providers/ProviderCatalog.ts"
import type { LineWriter } from "../../src/server/LineWriter.ts"
import { BackendUnavailable, ServiceKeys } from "../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeyMissing, ProviderKeys } from "../../src/vault/ProviderKeys.ts"
import { loopbackServer } from "../support/loopbackServer.ts"
import { type FakeUpstream, startFakeUpstream } from "./upstreams/FakeUpstream.ts"

export const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
export const OTHER_ORG = "0b0e6d8a-1111-4c5b-8e7f-0a1b2c3d4e5f"
export const SERVICE_KEY = "vdb_sk_testServiceKeyForTheGatewayTests0000000"
export const OPENAI_KEY = "sk-test-openai-provider-key"
export const ANTHROPIC_KEY = "sk-ant-test-anthropic-provider-key"

/** Switches the fakes flip to simulate backend trouble. */
export interface Backends {
  authDown: boolean
  providerDown: boolean
}

const fakeServiceKeys = (backends: Backends) =>
  Layer.mock(ServiceKeys)({
    verify: (org, key) =>
      backends.authDown
        ? Effect.fail(new BackendUnavailable({ backend: "authentication" }))
        : Effect.succeed(org === ORG && key === SERVICE_KEY ? "valid" : "invalid")
  })

const fakeProviderKeys = (backends: Backends) => {
  const keys = new Map<string, string>([[`${ORG}/openai`, OPENAI_KEY], [`${ORG}/anthropic`, ANTHROPIC_KEY]])
  return Layer.mock(ProviderKeys)({
    get: (org, provider) => {
      if (backends.providerDown) return Effect.fail(new BackendUnavailable({ backend: "provider" }))
      const key = keys.get(`${org}/${provider}`)
      return key === undefined ? Effect.fail(new ProviderKeyMissing({ provider })) : Effect.succeed(Redacted.make(key))
    }
  })
}

export interface Gateway {
  readonly url: string
  readonly port: number
  readonly upstream: FakeUpstream
  readonly backends: Backends
  readonly inferenceLog: InferenceLog["Service"]
  readonly nonces: Nonces["Service"]
  close(): Promise<void>
}

/** A loopback server for gateway routes (`loopbackServer`). */
export const gatewayServer = loopbackServer

/** The gateway on a loopback port, every built-in provider pointed at one fake upstream. */
export const startGateway = async (options?: {
  readonly timeout?: Duration.Input
  /**
   * "listener" (the default, as `bin/vdb serve` runs it): inference requests are answered below
   * the router (`src/gateway/RelayListener.ts`); "router": every request goes through `HttpRouter`.
   */
  readonly path?: "listener" | "router"
  /** Where the listener's access-log lines go; discarded unless given. */
  readonly accessLog?: LineWriter
  /** Tracing services (`TracingOn`, a `Tracer`, `RootSampler`) in place of the defaults (tracing off). */
  readonly tracing?: Layer.Layer<never>
}): Promise<Gateway> => {
  const upstream = await startFakeUpstream()
  const backends: Backends = { authDown: false, providerDown: false }
  const config: Record<string, string> = {}
  for (
    const slug of [
      "openai",
      "openrouter",
      "groq",
      "mistral",
      "deepseek",
      "xai",
      "together",
      "fireworks",
      "alibaba",
      "moonshot",
      "minimax"
    ]
  ) {
    config[`VDB_PROVIDER_${slug.toUpperCase()}_BASE_URL`] = `${upstream.url}/v1`
  }
  config["VDB_PROVIDER_ANTHROPIC_BASE_URL"] = upstream.url
  const services = Layer.mergeAll(
    fakeServiceKeys(backends),
    fakeProviderKeys(backends),
    Inspection.allowAll,
    InferenceLog.layerMemory,
    Layer.succeed(Nonces)(Nonces.make((org) =>
      backends.authDown
        ? Effect.fail(new BackendUnavailable({ backend: "authentication" }))
        : Effect.succeed(Redacted.make(`secret-of-${org}`))
    )),
    ProviderCatalog.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config)))),
    UpstreamClient.layerWith({ timeout: options?.timeout ?? "120 seconds" })
  )
  // As the server mounts it: beside `/healthz` (the gateway's catch-all must not shadow it).
  const healthz = HttpRouter.add("GET", "/healthz", HttpServerResponse.text("ok"))
  const app = HttpRouter.serve(Layer.merge(GatewayRoutesWith, healthz), { disableLogger: true, disableListenLog: true })
    .pipe(
      Layer.provideMerge(services),
      Layer.provideMerge(gatewayServer(options?.path ?? "listener", options?.accessLog)),
      Layer.provideMerge(options?.tracing ?? Layer.empty)
    )
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(app, scope))
  const { address } = Context.get(context, HttpServer.HttpServer)
  const port = "port" in address ? address.port : 0
  const inferenceLog = Context.get(context, InferenceLog)
  const nonces = Context.get(context, Nonces)
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    upstream,
    backends,
    inferenceLog,
    nonces,
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await upstream.close()
    }
  }
}
