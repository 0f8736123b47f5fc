/**
 * Gateway overhead benchmark (`npm run bench -- gateway`).
 *
 * One process tree on loopback: a local upstream, the gateway (fixed-answer
 * key services, allow-all inspection, inference log off, the production
 * access log on) and a bare Node relay (undici, no policy, no log) in child
 * processes; this process drives the load. Both relay through the same kind
 * of undici pool (one `Agent`, keep-alive, no pipelining). The gateway's
 * stderr (its access log) goes to a file, as a deployed service's would, and
 * every request must have its line there. `BENCH_ACCESS_LOG=0` measures the
 * gateway without the access log (and the fifth child, below, then writes none either). A fourth child, the framework floor, is the same relay as one
 * route on Effect's HTTP server with the same access log and nothing else (`runEffectFloor`): the
 * ceiling for any gateway served by `HttpRouter`. A fifth is the bare relay writing the production
 * access-log line and nothing else (`runRelay` with `logged`): the floor of the throughput target,
 * which is set against a relay that logs nothing while the gateway must log every request. The
 * gateway and both floors run with the Node and glibc settings `bin/vdb` starts the server with
 * (`bench/serverFlags.ts`). Throughput is measured in eight interleaved rounds (`BENCH_SECONDS`, 8 s
 * in all per target) and each ratio is the median of the rounds' ratios.
 * Reports added latency versus calling the upstream directly (p50/p99 at
 * concurrency 1), throughput at concurrency 64 as a ratio to the bare relay,
 * added time to first streamed byte, and the gateway's RSS over a sustained
 * run at concurrency 64 (`--rss-seconds=N`, default 120; 0 skips it).
 * `BENCH_PROFILE=DIR` writes `--cpu-prof` profiles of the gateway and the relay to DIR;
 * `BENCH_GATEWAY_NODE_FLAGS="..."` runs the gateway under extra Node/V8 flags (recorded in the result).
 * `BENCH_TRACING=0.1` runs the gateway with tracing on, sampling 10 % of requests, exporting to a
 * loopback OTLP receiver (`bench/otlpReceiver.ts`), and writes bench/results/gateway-tracing.json instead.
 * Metrics are always on, as `bin/vdb serve` runs them: every request is recorded (HTTP, firewall,
 * upstream latency, tokens); only scraping is absent.
 * Writes bench/results/gateway.json.
 */
import { fork } from "node:child_process"
import { closeSync, createReadStream, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { cpus, loadavg, tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { getHeapSpaceStatistics } from "node:v8"
import { askChild, median, round3 } from "./childQuery.ts"
import { ORG, requestBody, SERVICE_KEY } from "./gatewayRequests.ts"
import { benchTracing } from "./otlpReceiver.ts"
import { SERVER_ENV, SERVER_NODE_FLAGS } from "./serverFlags.ts"

const here = dirname(fileURLToPath(import.meta.url))

const COMPLETION = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "gpt-4.1-mini",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Hello! How can I help you today?" },
    finish_reason: "stop"
  }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 }
})
const FRAME = `data: ${
  JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "Hi" } }] })
}\n\n`

// ---------------------------------------------------------------- roles

/** CPU microseconds and RSS bytes of this process, on request from the driver (CPU is robust to a busy machine). */
const reportCpu = () =>
  process.on("message", (message) => {
    if (message === "cpu") {
      const usage = process.cpuUsage()
      process.send!({ cpu: usage.user + usage.system })
    } else if (message === "rss") {
      process.send!({ rss: process.memoryUsage.rss() })
    } else if (message === "heap") {
      // Where a step in RSS sits: V8's spaces (MiB committed) and memory outside V8's heap.
      const mib = (bytes: number) => Math.round(bytes / 1048576 * 10) / 10
      const spaces = Object.fromEntries(
        getHeapSpaceStatistics().filter((space) => space.space_size > 0).map((
          space
        ) => [space.space_name, mib(space.space_size)])
      )
      const usage = process.memoryUsage()
      process.send!({ heap: { ...spaces, external: mib(usage.external), arrayBuffers: mib(usage.arrayBuffers) } })
    }
  })

const listen = (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
  reportCpu()
  const server = createServer({ keepAliveTimeout: 60_000 }, handler)
  server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as AddressInfo).port }))
}

const runUpstream = () => {
  process.on("SIGINT", () => process.exit(0))
  listen((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      if (Buffer.concat(chunks).includes("\"stream\":true")) {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(FRAME)
        setImmediate(() => {
          res.write(FRAME)
          res.end("data: [DONE]\n\n")
        })
        return
      }
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(COMPLETION) })
      res.end(COMPLETION)
    })
  })
}

/**
 * The bare relay. With `logged`, the floor with the access log on: the same relay writing the
 * production access-log line (`nodeAccessLog`, the one the gateway's inference listener writes,
 * through the same stderr `LineWriter`) and nothing else, run with the server's Node settings like
 * the gateway. The throughput target is set against the relay without a log, so this is the most
 * a gateway that must log each request can reach on the machine.
 */
const runRelay = async (upstreamPort: number, logged = false) => {
  const { Agent } = await import("@effect/platform-node/Undici")
  const agent = new Agent({ keepAliveTimeout: 30_000, pipelining: 1 })
  const origin = `http://127.0.0.1:${upstreamPort}`
  const log = logged
    ? (await import("../src/server/AccessLog.ts")).nodeAccessLog("gateway", (await import("effect")).Context.empty())
    : undefined
  process.on("SIGINT", () => process.exit(0))
  listen((req, res) => {
    const line = log?.(req, "/v1/chat/completions")
    if (line !== undefined) res.once("close", () => line(res, 0))
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const headers: Record<string, string> = {}
      for (const name in req.headers) {
        if (name !== "host" && name !== "connection" && name !== "content-length" && name !== "authorization") {
          headers[name] = req.headers[name] as string
        }
      }
      headers.authorization = "Bearer sk-upstream"
      agent.request({ origin, path: "/v1/chat/completions", method: "POST", headers, body: Buffer.concat(chunks) })
        .then(
          (upstream) => {
            res.writeHead(upstream.statusCode, upstream.headers as Record<string, string>)
            upstream.body.pipe(res)
          },
          () => {
            res.writeHead(502)
            res.end()
          }
        )
    })
  })
}

const runGateway = async (upstreamPort: number) => {
  const [{ NodeHttpServer }, { ConfigProvider, Effect, Layer, Redacted }, { HttpRouter }] = await Promise.all([
    import("@effect/platform-node"),
    import("effect"),
    import("effect/http")
  ])
  const { GatewayRoutesWith } = await import("../src/gateway/GatewayRoutes.ts")
  const { ProviderCatalog } = await import("../src/providers/ProviderCatalog.ts")
  const { UpstreamClient } = await import("../src/http/UpstreamClient.ts")
  const { Inspection } = await import("../src/gateway/pipeline/Inspection.ts")
  const { InferenceLog } = await import("../src/inference/InferenceLog.ts")
  const { ServiceKeys } = await import("../src/servicekeys/ServiceKeys.ts")
  const { Nonces } = await import("../src/nonces/Nonces.ts")
  const { ProviderKeys } = await import("../src/vault/ProviderKeys.ts")
  const providerKey = Redacted.make("sk-upstream")
  const services = Layer.mergeAll(
    Layer.mock(ServiceKeys)({
      verify: (org: string, key: string) => Effect.succeed(org === ORG && key === SERVICE_KEY ? "valid" : "invalid")
    }),
    Layer.mock(ProviderKeys)({ get: () => Effect.succeed(providerKey) }),
    Inspection.allowAll,
    InferenceLog.layerDisabled,
    Layer.succeed(Nonces)(Nonces.make(() => Effect.succeed(Redacted.make("bench-secret")))),
    UpstreamClient.layer,
    ProviderCatalog.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({
      VDB_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${upstreamPort}/v1`
    }))))
  )
  // The production access-log middleware and logger (JSON lines on stderr, as `src/cli/main.ts`
  // and `src/server/Serve.ts` install them); `BENCH_ACCESS_LOG=0` leaves it off.
  // `BENCH_ACCESS_LOG_MODULE=PATH` measures another implementation of the middleware (an A/B against an older one).
  // `BENCH_TRACING`: the driver set the `OTEL_*` variables; the layer `bin/vdb serve` uses reads them.
  const { TracingLayer } = await import("../src/observability/Tracing.ts")
  const { accessLog } = await import(
    process.env.BENCH_ACCESS_LOG_MODULE ?? "../src/server/AccessLog.ts"
  ) as typeof import("../src/server/AccessLog.ts")
  const { Logger } = await import("effect")
  const options = { disableLogger: true, disableListenLog: true } as const
  // As `src/server/Serve.ts` serves it: an `InterceptingServer`, so the inference requests are answered
  // below the router (`src/gateway/RelayListener.ts`). `BENCH_GATEWAY_PATH=router` sends them through `HttpRouter`.
  const { InterceptingServer, ServerInterceptors } = await import("../src/server/InterceptingServer.ts")
  const { AccessLogWriter } = await import("../src/server/AccessLog.ts")
  const server = new InterceptingServer({ keepAliveTimeout: 60_000 })
  const viaRouter = process.env.BENCH_GATEWAY_PATH === "router"
  const served = process.env.BENCH_ACCESS_LOG !== "0"
    ? HttpRouter.serve(GatewayRoutesWith, { ...options, middleware: accessLog("gateway") }).pipe(
      Layer.provide(Logger.layer([Logger.withConsoleError(Logger.formatJson)]))
    )
    : HttpRouter.serve(GatewayRoutesWith, options)
  const app = served.pipe(
    Layer.provide(services),
    Layer.provide(viaRouter ? Layer.empty : Layer.succeed(ServerInterceptors, server.interceptors)),
    // The listener logs like the middleware; with the log off it writes nowhere.
    Layer.provide(
      process.env.BENCH_ACCESS_LOG === "0"
        ? Layer.succeed(AccessLogWriter, { write: () => undefined, flush: () => undefined })
        : Layer.empty
    ),
    Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" })),
    Layer.provide(TracingLayer)
  )
  Effect.runFork(Layer.launch(app))
  // Lets `--cpu-prof` write its profile when the driver stops us.
  process.on("SIGINT", () => process.exit(0))
  reportCpu()
  server.once("listening", () => process.send!({ port: (server.address() as AddressInfo).port }))
}

/**
 * The framework floor: the same relay (our body reader, our undici client, the upstream's headers
 * cleaned as the gateway cleans them) as one route on Effect's HTTP server with the production
 * access log (off with `BENCH_ACCESS_LOG=0`, like the gateway's), and nothing else: no authentication, no policy, no provider key. What the gateway
 * cannot go below while its routes are served by `HttpRouter`.
 */
const runEffectFloor = async (upstreamPort: number) => {
  const [{ NodeHttpServer }, { Effect, Layer, Logger }, { HttpRouter, HttpServerResponse }, http] = await Promise.all([
    import("@effect/platform-node"),
    import("effect"),
    import("effect/http"),
    import("node:http")
  ])
  const { UpstreamClient } = await import("../src/http/UpstreamClient.ts")
  const { readBody } = await import("../src/gateway/relay/RequestBody.ts")
  const { clientResponseHeaders } = await import("../src/gateway/relay/RelayHeaders.ts")
  const { accessLog } = await import("../src/server/AccessLog.ts")
  const origin = `http://127.0.0.1:${upstreamPort}`
  const route = HttpRouter.use(Effect.fnUntraced(function*(router) {
    const upstream = yield* UpstreamClient
    yield* router.add("POST", "/v1/chat/completions", (request) =>
      Effect.gen(function*() {
        const body = yield* readBody(request)
        const headers: Record<string, string> = {}
        for (const name in request.headers) {
          if (name !== "host" && name !== "connection" && name !== "content-length" && name !== "authorization") {
            headers[name] = request.headers[name]!
          }
        }
        headers.authorization = "Bearer sk-upstream"
        const response = yield* upstream.buffered({
          provider: "openai",
          origin,
          path: "/v1/chat/completions",
          method: "POST",
          headers,
          body
        })
        return HttpServerResponse.uint8Array(response.body, {
          status: response.status,
          headers: clientResponseHeaders(response.headers, false)
        })
      }).pipe(Effect.orElseSucceed(() => HttpServerResponse.empty({ status: 502 }))))
  }))
  const server = http.createServer({ keepAliveTimeout: 60_000 })
  const options = { disableLogger: true, disableListenLog: true } as const
  const served = process.env.BENCH_ACCESS_LOG !== "0"
    ? HttpRouter.serve(route, { ...options, middleware: accessLog("gateway") })
    : HttpRouter.serve(route, options)
  const app = served.pipe(
    Layer.provide(Logger.layer([Logger.withConsoleError(Logger.formatJson)])),
    Layer.provide(UpstreamClient.layer),
    Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
  )
  Effect.runFork(Layer.launch(app))
  process.on("SIGINT", () => process.exit(0))
  reportCpu()
  server.once("listening", () => process.send!({ port: (server.address() as AddressInfo).port }))
}

// ---------------------------------------------------------------- load

interface Target {
  readonly name: string
  readonly origin: string
  readonly path: string
  readonly headers: Record<string, string>
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const drive = async () => {
  const { Pool } = await import("@effect/platform-node/Undici")
  const gatewayFlags = (process.env.BENCH_GATEWAY_NODE_FLAGS ?? "").split(" ").filter((flag) => flag !== "")
  const logDir = mkdtempSync(join(tmpdir(), "vdb-bench-gateway-"))
  const logFile = join(logDir, "gateway.stderr")
  const logFd = openSync(logFile, "w")
  const floorLogFd = openSync(join(logDir, "effect-floor.stderr"), "w")
  const relayLogFile = join(logDir, "relay-log.stderr")
  const relayLogFd = openSync(relayLogFile, "w")
  const spawnWith = (extraEnv: Record<string, string>) => (role: string, arg?: number) =>
    new Promise<
      {
        port: number
        kill: () => Promise<void>
        cpu: () => Promise<number>
        rss: () => Promise<number>
        heap: () => Promise<Record<string, number>>
      }
    >((resolve) => {
      const profile = role !== "upstream" && process.env.BENCH_PROFILE !== undefined
      // The children that stand for the deployed server: the production Node settings, stderr to a file.
      const deployed = role === "gateway" || role === "effect" || role === "relay-log"
      const stderr = role === "gateway" ? logFd : role === "effect" ? floorLogFd : relayLogFd
      const child = fork(fileURLToPath(import.meta.url), [role, String(arg ?? "")], {
        stdio: deployed ? ["ignore", "inherit", stderr, "ipc"] : "inherit",
        execArgv: [
          ...(profile
            ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`, `--cpu-prof-name=${role}.cpuprofile`]
            : []),
          // The gateway and the floors with a log run with the settings `bin/vdb` starts the server with.
          ...(deployed ? SERVER_NODE_FLAGS : []),
          ...(role === "gateway" ? gatewayFlags : [])
        ],
        env: deployed
          ? { ...process.env, ...SERVER_ENV, ...extraEnv }
          : process.env
      })
      const ask = <A = number>(question: "cpu" | "rss" | "heap") => askChild<A>(child, question)
      child.once("message", (message: any) =>
        resolve({
          port: message.port,
          cpu: () => ask("cpu"),
          rss: () => ask("rss"),
          heap: () => ask<Record<string, number>>("heap"),
          kill: () => new Promise<void>((done) => (child.once("exit", () => done()), child.kill("SIGINT")))
        }))
    })
  const spawn = spawnWith({})
  const upstream = await spawn("upstream")
  const tracing = await benchTracing()
  const gateway = await spawnWith(tracing?.env ?? {})("gateway", upstream.port)
  const relay = await spawn("relay", upstream.port)
  const floor = await spawn("effect", upstream.port)
  const relayLogged = await spawn("relay-log", upstream.port)

  const floorTarget: Target = {
    name: "effect",
    origin: `http://127.0.0.1:${floor.port}`,
    path: "/v1/chat/completions",
    headers: { authorization: "Bearer service", "content-type": "application/json" }
  }
  const targets: Record<"direct" | "gateway" | "relay", Target> = {
    direct: {
      name: "direct",
      origin: `http://127.0.0.1:${upstream.port}`,
      path: "/v1/chat/completions",
      headers: { authorization: "Bearer sk-upstream", "content-type": "application/json" }
    },
    gateway: {
      name: "gateway",
      origin: `http://127.0.0.1:${gateway.port}`,
      path: `/openai/${ORG}/v1/chat/completions`,
      headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" }
    },
    relay: {
      name: "relay",
      origin: `http://127.0.0.1:${relay.port}`,
      path: "/v1/chat/completions",
      headers: { authorization: "Bearer service", "content-type": "application/json" }
    }
  }
  const relayLogTarget: Target = { ...targets.relay, name: "relay-log", origin: `http://127.0.0.1:${relayLogged.port}` }
  const pools = new Map(
    [...Object.values(targets), floorTarget, relayLogTarget].map((
      t
    ) => [t.name, new Pool(t.origin, { connections: 64, pipelining: 1 })])
  )
  const plain = requestBody(false)
  const streamed = requestBody(true)

  let gatewayRequests = 0
  let relayLogRequests = 0
  const once = async (target: Target, body: string) => {
    if (target.name === "gateway") gatewayRequests++
    if (target.name === "relay-log") relayLogRequests++
    const response = await pools.get(target.name)!.request({
      path: target.path,
      method: "POST",
      headers: target.headers,
      body
    })
    if (response.statusCode !== 200) throw new Error(`${target.name}: status ${response.statusCode}`)
    await response.body.arrayBuffer()
  }
  /** Milliseconds to the first body byte of a streamed response. */
  const firstByte = async (target: Target) => {
    if (target.name === "gateway") gatewayRequests++
    const start = performance.now()
    const response = await pools.get(target.name)!.request({
      path: target.path,
      method: "POST",
      headers: target.headers,
      body: streamed
    })
    let first = 0
    for await (const _chunk of response.body) {
      if (first === 0) first = performance.now() - start
    }
    return first
  }
  const sequential = async (measure: () => Promise<number>, count: number) => {
    const samples: Array<number> = []
    for (let i = 0; i < count; i++) samples.push(await measure())
    return samples.sort((a, b) => a - b)
  }
  const timed = (target: Target) => async () => {
    const start = performance.now()
    await once(target, plain)
    return performance.now() - start
  }
  const cpuOf: Record<string, () => Promise<number>> = {
    gateway: gateway.cpu,
    relay: relay.cpu,
    effect: floor.cpu,
    "relay-log": relayLogged.cpu
  }
  const cpuPerRequest: Record<string, Array<number>> = { gateway: [], relay: [], effect: [], "relay-log": [] }
  const throughput = async (target: Target, seconds: number) => {
    const cpuBefore = await cpuOf[target.name]?.()
    let done = 0
    const until = performance.now() + seconds * 1000
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (performance.now() < until) {
        await once(target, plain)
        done++
      }
    }))
    if (cpuBefore !== undefined) cpuPerRequest[target.name]!.push((await cpuOf[target.name]!() - cpuBefore) / done)
    return done / seconds
  }

  const loadStart = loadavg().map((n) => Math.round(n * 100) / 100)
  const N = Number(process.env.BENCH_REQUESTS ?? 4000)
  const SECONDS = Number(process.env.BENCH_SECONDS ?? 8)
  // Warm-up: JIT, keep-alive connections on every hop.
  for (const target of Object.values(targets)) {
    await sequential(timed(target), 1000)
    await throughput(target, 0.5)
    await sequential(() => firstByte(target), 200)
  }
  for (const target of [floorTarget, relayLogTarget]) {
    await sequential(timed(target), 1000)
    await throughput(target, 0.5)
  }
  // Interleave rounds so drift (thermal, GC, neighbours) hits every target alike.
  const latency: Record<string, Array<number>> = { direct: [], gateway: [], relay: [] }
  const first: Record<string, Array<number>> = { direct: [], gateway: [], relay: [] }
  for (let round = 0; round < 4; round++) {
    for (const target of Object.values(targets)) {
      latency[target.name]!.push(...await sequential(timed(target), N / 4))
      first[target.name]!.push(...await sequential(() => firstByte(target), N / 8))
    }
  }
  const rps: Record<string, number> = { gateway: 0, relay: 0, effect: 0, "relay-log": 0 }
  // Short rounds, each target once a round, starting with a different one each time. A ratio is the
  // median of the rounds' ratios (each against the bare relay's rate in the same round), so one round
  // disturbed by a neighbour moves it less than it moves a ratio of means.
  const ROUNDS = 8
  const order = [targets.relay, targets.gateway, floorTarget, relayLogTarget]
  const perRound: Record<string, Array<number>> = { gateway: [], relay: [], effect: [], "relay-log": [] }
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < order.length; k++) {
      const target = order[(round + k) % order.length]!
      const rate = await throughput(target, SECONDS / ROUNDS)
      rps[target.name]! += rate / ROUNDS
      perRound[target.name]!.push(rate)
    }
  }
  /** The median over rounds of `name`'s rate against `base`'s in the same round. */
  const ratio = (name: string, base: string) =>
    median(perRound[name]!.map((rate, round) => rate / perRound[base]![round]!))
  const stats = (samples: Array<number>) => {
    const sorted = [...samples].sort((a, b) => a - b)
    return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) }
  }
  const direct = stats(latency.direct!)
  const viaGateway = stats(latency.gateway!)
  const viaRelay = stats(latency.relay!)
  const result = {
    date: new Date().toISOString(),
    node: process.version,
    requestsPerTarget: N,
    latencyMs: {
      direct: { p50: round3(direct.p50), p99: round3(direct.p99) },
      gateway: { p50: round3(viaGateway.p50), p99: round3(viaGateway.p99) },
      bareRelay: { p50: round3(viaRelay.p50), p99: round3(viaRelay.p99) }
    },
    addedLatencyMs: {
      p50: round3(viaGateway.p50 - direct.p50),
      p99: round3(viaGateway.p99 - direct.p99),
      bareRelayP50: round3(viaRelay.p50 - direct.p50),
      bareRelayP99: round3(viaRelay.p99 - direct.p99)
    },
    throughputRps: { gateway: Math.round(rps.gateway!), bareRelay: Math.round(rps.relay!) },
    throughputRatio: round3(ratio("gateway", "relay")),
    // Each round's rate against the bare relay's in that round, in round order (the ratios above are their medians).
    throughputRounds: Object.fromEntries(["gateway", "effect", "relay-log"].map((name) => [
      name,
      perRound[name]!.map((rate, round) => round3(rate / perRound.relay![round]!))
    ])),
    // The same relay as a bare route on Effect's HTTP server with the access log (see `runEffectFloor`):
    // the ratio the gateway cannot pass while served by `HttpRouter`, and the gateway against it.
    frameworkFloor: {
      rps: Math.round(rps.effect!),
      ratioToBareRelay: round3(ratio("effect", "relay")),
      cpuMicrosPerRequest: Math.round(median(cpuPerRequest.effect!)),
      gatewayRatioToFloor: round3(ratio("gateway", "effect"))
    },
    // The bare relay writing the production access-log line and nothing else (`runRelay`): the floor of
    // the throughput target with the log on, since the relay it is measured against writes none.
    relayWithAccessLog: {
      rps: Math.round(rps["relay-log"]!),
      ratioToBareRelay: round3(ratio("relay-log", "relay")),
      cpuMicrosPerRequest: Math.round(median(cpuPerRequest["relay-log"]!)),
      gatewayRatioToIt: round3(ratio("gateway", "relay-log"))
    },
    // Process CPU per relayed request at concurrency 64 (µs): what the throughput ratio means on an idle machine.
    cpuMicrosPerRequest: {
      gateway: Math.round(median(cpuPerRequest.gateway!)),
      bareRelay: Math.round(median(cpuPerRequest.relay!)),
      ratio: round3(median(cpuPerRequest.relay!) / median(cpuPerRequest.gateway!))
    },
    // Other work on the machine inflates p99 and depresses throughput; recorded so results can be read.
    loadAverage: { start: loadStart, end: loadavg().map(round3) },
    firstByteMs: {
      direct: round3(stats(first.direct!).p50),
      gateway: round3(stats(first.gateway!).p50),
      bareRelay: round3(stats(first.relay!).p50),
      addedP50: round3(stats(first.gateway!).p50 - stats(first.direct!).p50)
    },
    targets: TARGETS
  }
  // Sustained load on the gateway alone: RSS sampled every few seconds must stay flat (no leak per request).
  const rssSeconds = rssSecondsOption()
  const memory = rssSeconds > 0
    ? await sustained(rssSeconds, () => once(targets.gateway, plain), gateway.rss, gateway.heap)
    : undefined
  const met = {
    addedP50: result.addedLatencyMs.p50 <= TARGETS.addedP50Ms,
    addedP99: result.addedLatencyMs.p99 <= TARGETS.addedP99Ms,
    throughput: result.throughputRatio >= TARGETS.throughputRatio,
    firstByte: result.firstByteMs.addedP50 <= TARGETS.firstByteAddedMs,
    ...(memory ? { rssFlat: memory.growth <= TARGETS.rssGrowth } : {})
  }
  for (const pool of pools.values()) await pool.close()
  await Promise.all([upstream.kill(), gateway.kill(), relay.kill(), floor.kill(), relayLogged.kill()])
  const traced = tracing === undefined
    ? undefined
    : { ratio: tracing.ratio, sampler: "parentbased_traceidratio", ...tracing.stats() }
  await tracing?.close()
  closeSync(logFd)
  closeSync(floorLogFd)
  closeSync(relayLogFd)
  // Every request the gateway answered has its line, complete (the gateway flushes on exit).
  const logged = await requestLines(logFile)
  const relayLines = (await requestLines(relayLogFile)).lines
  rmSync(logDir, { recursive: true, force: true })
  const accessLogOn = process.env.BENCH_ACCESS_LOG !== "0"
  const output = {
    ...result,
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
    ...(gatewayFlags.length > 0 ? { gatewayNodeFlags: gatewayFlags.join(" ") } : {}),
    accessLog: accessLogOn
      ? { on: true, destination: "file", requests: gatewayRequests, lines: logged.lines, complete: logged.complete }
      : { on: false },
    ...(memory ? { memory } : {}),
    tracing: traced ?? { on: false },
    met
  }
  if (accessLogOn && logged.lines !== gatewayRequests) {
    console.error(`access log: ${logged.lines} lines for ${gatewayRequests} requests`)
  }
  if (accessLogOn && relayLines !== relayLogRequests) {
    console.error(`relay's access log: ${relayLines} lines for ${relayLogRequests} requests`)
  }
  mkdirSync(join(here, "results"), { recursive: true })
  writeFileSync(
    join(here, "results", traced ? "gateway-tracing.json" : "gateway.json"),
    JSON.stringify(output, null, 2) + "\n"
  )
  console.log(JSON.stringify(output, null, 2))
}

/**
 * The access-log lines of a log file, and whether each is a whole JSON line. Read line by line:
 * a fast machine's 120 s at concurrency 64 writes more than the 512 MiB one string can hold.
 */
const requestLines = async (file: string) => {
  let lines = 0
  let complete = true
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    if (!line.includes("\"message\":\"request\"")) continue
    lines++
    if (!line.endsWith("}")) complete = false
  }
  return { lines, complete }
}

const TARGETS = { addedP50Ms: 0.3, addedP99Ms: 1.5, throughputRatio: 0.8, firstByteAddedMs: 0.5, rssGrowth: 0.1 }

/** `--rss-seconds=N` (or `BENCH_RSS_SECONDS`): how long the sustained run lasts; 120 by default, 0 skips it. */
const rssSecondsOption = () => {
  const flag = process.argv.slice(2).find((arg) => arg.startsWith("--rss-seconds="))
  const value = Number(flag?.split("=")[1] ?? process.env.BENCH_RSS_SECONDS ?? 120)
  if (!Number.isFinite(value) || value < 0) throw new Error("--rss-seconds must be a number of seconds >= 0")
  return value
}

/**
 * Concurrency 64 for `seconds`, RSS sampled about every `seconds / 24`. Growth
 * compares the mean of the last quarter of samples with the mean of the first
 * quarter after the first tenth of the run (allocator and JIT warm-up).
 */
const sustained = async (
  seconds: number,
  request: () => Promise<void>,
  rss: () => Promise<number>,
  heap: () => Promise<Record<string, number>>
) => {
  const samples: Array<{ atS: number; rssMiB: number; heapMiB?: Record<string, number> }> = []
  const start = performance.now()
  const until = start + seconds * 1000
  let done = 0
  let sampling = true
  const sampler = (async () => {
    const every = Math.max(250, (seconds * 1000) / 24)
    while (sampling) {
      samples.push({
        atS: Math.round(performance.now() - start) / 1000,
        rssMiB: Math.round((await rss()) / 1048576 * 10) / 10,
        heapMiB: await heap()
      })
      await new Promise((r) => setTimeout(r, every))
    }
  })()
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (performance.now() < until) {
      await request()
      done++
    }
  }))
  sampling = false
  await sampler
  samples.push({
    atS: Math.round(performance.now() - start) / 1000,
    rssMiB: Math.round((await rss()) / 1048576 * 10) / 10
  })
  const settled = samples.filter((sample) => sample.atS >= seconds / 10)
  const quarter = Math.max(1, Math.floor(settled.length / 4))
  const mean = (xs: ReadonlyArray<{ rssMiB: number }>) => xs.reduce((sum, x) => sum + x.rssMiB, 0) / xs.length
  const early = mean(settled.slice(0, quarter))
  const late = mean(settled.slice(-quarter))
  return {
    seconds,
    concurrency: 64,
    requests: done,
    rps: Math.round(done / seconds),
    earlyRssMiB: Math.round(early * 10) / 10,
    lateRssMiB: Math.round(late * 10) / 10,
    maxRssMiB: Math.max(...samples.map((sample) => sample.rssMiB)),
    growth: Math.round((late / early - 1) * 1000) / 1000,
    samples
  }
}

const [role, arg] = process.argv.slice(2)
if (role === "upstream") runUpstream()
else if (role === "relay") void runRelay(Number(arg))
// With `BENCH_ACCESS_LOG=0` the gateway logs nothing, so neither does the floor it is compared with.
else if (role === "relay-log") void runRelay(Number(arg), process.env.BENCH_ACCESS_LOG !== "0")
else if (role === "gateway") void runGateway(Number(arg))
else if (role === "effect") void runEffectFloor(Number(arg))
else await drive()
