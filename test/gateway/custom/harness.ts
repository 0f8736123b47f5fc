import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer as createHttpServer, type IncomingHttpHeaders } from "node:http"
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https"
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TLSSocket } from "node:tls"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { CustomRelay } from "../../../src/gateway/custom/CustomRelay.ts"
import { GatewayRoutesWith } from "../../../src/gateway/GatewayRoutes.ts"
import { Inspection } from "../../../src/gateway/pipeline/Inspection.ts"
import { UpstreamClient } from "../../../src/http/UpstreamClient.ts"
import { InferenceLog } from "../../../src/inference/InferenceLog.ts"
import { Nonces } from "../../../src/nonces/Nonces.ts"
import { CustomProviders } from "../../../src/providers/custom/CustomProviders.ts"
import type { CustomProviderStore } from "../../../src/providers/custom/CustomProviderStore.ts"
import { Resolver } from "../../../src/providers/custom/Resolver.ts"
import type { VettingPolicy } from "../../../src/providers/custom/VettingPolicy.ts"
import { ProviderCatalog } from "../../../src/providers/ProviderCatalog.ts"
import { ServiceKeys } from "../../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeyMissing, ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { chatCompletion, chatStream } from "../upstreams/openai.ts"

export const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
export const OTHER_ORG = "0b0e6d8a-1111-4c5b-8e7f-0a1b2c3d4e5f"
export const KEY = "vdb_sk_customProviderTestsServiceKey00000000000"
export const OTHER_KEY = "vdb_sk_customProviderTestsOtherOrgKey000000000"
export const CUSTOM_KEY = "sk-custom-provider-key-for-tests"

/** A self-signed certificate for the test names, made with `openssl` at test time (nothing committed). */
export const testCertificate = (names: ReadonlyArray<string>) => {
  const dir = mkdtempSync(join(tmpdir(), "vdb-custom-cert-"))
  try {
    execFileSync("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
      "-days",
      "1",
      "-subj",
      `/CN=${names[0]}`,
      "-addext",
      `subjectAltName=${names.map((n) => `DNS:${n}`).join(",")}`
    ], { stdio: "ignore" })
    return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export interface Seen {
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly servername: string | false | null | undefined
  readonly body: string
}

/** An OpenAI-compatible provider over https on a loopback address; `redirectTo` answers every request with a 302. */
export interface HttpsUpstream {
  readonly port: number
  readonly seen: Array<Seen>
  redirectTo: string | undefined
  close(): Promise<void>
}

export const startHttpsUpstream = async (
  tls: { key: string; cert: string },
  host = "127.0.0.1",
  port = 0
): Promise<HttpsUpstream> => {
  const seen: Array<Seen> = []
  const state = { redirectTo: undefined as string | undefined }
  const server: HttpsServer = createHttpsServer(tls, (req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      seen.push({ url: req.url ?? "", headers: req.headers, servername: (req.socket as TLSSocket).servername, body })
      if (state.redirectTo !== undefined) {
        res.writeHead(302, { location: state.redirectTo, "content-type": "text/plain" })
        return res.end("moved")
      }
      const parsed = JSON.parse(body || "{}") as { model?: string; stream?: boolean }
      if (parsed.stream) {
        res.writeHead(200, { "content-type": "text/event-stream" })
        for (const frame of chatStream(parsed.model ?? "m")) res.write(frame)
        return res.end()
      }
      const text = JSON.stringify(chatCompletion(parsed.model ?? "m"))
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
      res.end(text)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  const upstream: HttpsUpstream = {
    port: (server.address() as AddressInfo).port,
    seen,
    get redirectTo() {
      return state.redirectTo
    },
    set redirectTo(value) {
      state.redirectTo = value
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return upstream
}

/** Counts every TCP connection (TLS or not) made to it: the proof that nothing was sent. */
export interface Canary {
  readonly port: number
  readonly connections: () => number
  close(): Promise<void>
}

export const startCanary = async (host = "127.0.0.1", port = 0): Promise<Canary> => {
  let connections = 0
  const server: TcpServer = createTcpServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const fakeServiceKeys = Layer.mock(ServiceKeys)({
  verify: (org, key) =>
    Effect.succeed((org === ORG && key === KEY) || (org === OTHER_ORG && key === OTHER_KEY) ? "valid" : "invalid")
})

/** Every organization has `CUSTOM_KEY` for every provider; the registry's removals are accepted. */
const fakeProviderKeys = Layer.mock(ProviderKeys)({
  get: (_org, provider) =>
    provider === "missing-key"
      ? Effect.fail(new ProviderKeyMissing({ provider }))
      : Effect.succeed(Redacted.make(CUSTOM_KEY)),
  remove: () => Effect.succeed(false)
})

export interface CustomGateway {
  readonly url: string
  readonly providers: CustomProviders["Service"]
  close(): Promise<void>
}

/**
 * The gateway's routes with custom providers over `store` (or a fresh memory
 * store), `resolver` answering lookups and the given vetting policy
 * (production's, or the test allowance).
 */
export const startCustomGateway = async (options: {
  readonly resolver: Layer.Layer<Resolver>
  readonly policy: Layer.Layer<VettingPolicy>
  readonly store?: CustomProviderStore
  /** The firewall step; everything allowed unless given. */
  readonly inspection?: Layer.Layer<Inspection>
}): Promise<CustomGateway> => {
  const registry =
    (options.store === undefined ? CustomProviders.layerMemory : CustomProviders.layerMemoryFrom(options.store)).pipe(
      Layer.provide(fakeProviderKeys)
    )
  const custom = CustomRelay.layer.pipe(
    Layer.provideMerge(registry),
    Layer.provide(Layer.merge(options.resolver, options.policy)),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({})))
  )
  const services = Layer.mergeAll(
    fakeServiceKeys,
    fakeProviderKeys,
    options.inspection ?? Inspection.allowAll,
    InferenceLog.layerMemory,
    Layer.succeed(Nonces)(Nonces.make((org) => Effect.succeed(Redacted.make(`secret-of-${org}`)))),
    ProviderCatalog.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({})))),
    UpstreamClient.layerWith({ timeout: "10 seconds" }),
    custom
  )
  const app = HttpRouter.serve(GatewayRoutesWith, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(services),
    Layer.provideMerge(Invalidation.layerMemory),
    Layer.provideMerge(NodeHttpServer.layer(createHttpServer, { port: 0, host: "127.0.0.1" }))
  )
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(app, scope))
  const { address } = Context.get(context, HttpServer.HttpServer)
  return {
    url: `http://127.0.0.1:${"port" in address ? address.port : 0}`,
    providers: Context.get(context, CustomProviders),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** A resolver from a table; a function entry sees how many times the name was looked up before. */
export const tableResolver = (table: Record<string, ReadonlyArray<string> | ((n: number) => ReadonlyArray<string>)>) =>
  Resolver.layerFrom((host, n) => {
    const entry = table[host]
    return typeof entry === "function" ? entry(n) : entry
  })

/** POST a chat completion to the gateway as `org`; the raw response. */
export const chat = (
  gateway: CustomGateway,
  slug: string,
  org = ORG,
  key = KEY,
  body: unknown = { model: "m", messages: [{ role: "user", content: "hi" }] }
) =>
  fetch(`${gateway.url}/${slug}/${org}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body)
  })
