import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Logger, References, Scope, Stream } from "effect"
import { HttpEffect, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { createServer, request as httpRequest } from "node:http"
import { join } from "node:path"
import { Readable } from "node:stream"
import { afterAll, beforeAll } from "vitest"
import { accessLog, AccessLogWriter, durationText, isoTimestamp } from "../../src/server/AccessLog.ts"
import { type LineWriter, makeLineWriter } from "../../src/server/LineWriter.ts"
import { throwawayDatabase } from "../support/database.ts"
import { type RunningServer, startServer, tempDataDir } from "../support/processes.ts"

interface Line {
  readonly requestId: string
  readonly service: string
  readonly method: string
  readonly route: string
  readonly status: number
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** Sends one request; `abortAfterFirstChunk` closes the connection once the body has started. */
const send = (
  port: number,
  path: string,
  options: { headers?: Record<string, string>; abortAfterFirstChunk?: boolean } = {}
) =>
  new Promise<number>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers: options.headers ?? {} }, (res) => {
      res.on("data", () => {
        if (options.abortAfterFirstChunk) {
          req.destroy()
          resolve(res.statusCode ?? 0)
        }
      })
      res.on("end", () => resolve(res.statusCode ?? 0))
      // A response cut short by the server ends in an error, then a close.
      res.on("error", () => {})
      res.on("close", () => resolve(res.statusCode ?? 0))
    })
    req.on("error", (error) => (options.abortAfterFirstChunk ? resolve(0) : reject(error)))
    req.end()
  })

/** A writer that keeps what reaches the destination: each chunk is one write of the destination. */
const collecting = () => {
  const chunks: Array<string> = []
  const writer = makeLineWriter((chunk) => chunks.push(chunk))
  const lines = () => chunks.join("").split("\n").filter((line) => line !== "")
  return { chunks, writer, lines, parsed: () => lines().map((line) => JSON.parse(line) as { annotations: Line }) }
}

const neverEnds = () => {
  const body = new Readable({ read() {} })
  body.push("first\n")
  return body
}
const breaksOff = () => {
  const body = neverEnds()
  setTimeout(() => body.destroy(new Error("the upstream dropped")), 20)
  return body
}

/** A loopback server with the access log, its lines going to `writer`. */
const serveProbe = (writer: LineWriter, extra?: Layer.Layer<never>) =>
  Effect.gen(function*() {
    const routes = Layer.mergeAll(
      HttpRouter.add("GET", "/ok", HttpServerResponse.text("ok")),
      HttpRouter.add("GET", "/boom", Effect.die(new Error("boom"))),
      // A relayed body whose source breaks off after its first bytes (an upstream that dropped), and one that never ends.
      HttpRouter.add("GET", "/broken", Effect.sync(() => HttpServerResponse.raw(breaksOff()))),
      HttpRouter.add("GET", "/raw-stream", Effect.sync(() => HttpServerResponse.raw(neverEnds()))),
      // As the MCP server answers a notification: 200 from the handler, 202 from a pre-response handler.
      HttpRouter.add(
        "GET",
        "/accepted",
        Effect.andThen(
          HttpEffect.appendPreResponseHandler((_request, response) =>
            Effect.succeed(HttpServerResponse.setStatus(response, 202))
          ),
          Effect.succeed(HttpServerResponse.empty())
        )
      ),
      HttpRouter.add(
        "GET",
        "/stream",
        HttpServerResponse.stream(Stream.concat(Stream.make(new TextEncoder().encode("first\n")), Stream.never))
      )
    )
    const server = HttpRouter.serve(routes, {
      disableLogger: true,
      disableListenLog: true,
      middleware: accessLog("probe", { relays: true })
    }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
      Layer.provide(Layer.succeed(AccessLogWriter, writer)),
      Layer.provide(extra ?? Layer.empty)
    )
    const context = yield* Layer.build(server)
    return (Context.get(context, HttpServer.HttpServer).address as unknown as { readonly port: number }).port
  })

const waitFor = (ready: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && !ready(); i++) yield* Effect.sleep("20 millis")
  })

describe("access log in process", () => {
  it.live("logs the status actually sent: 404 for no route, 500 for a defect, 499 for an aborted stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const sink = collecting()
      const port = yield* serveProbe(sink.writer)

      const statuses = yield* Effect.promise(() =>
        Promise.all([
          send(port, "/ok", { headers: { "x-request-id": "client-id:1.2_3-4" } }),
          send(port, "/nowhere?token=secret", { headers: { "x-request-id": "x".repeat(129) } }),
          send(port, "/boom", { headers: { "x-request-id": "bad id\"}" } }),
          send(port, "/accepted")
        ])
      )
      assert.deepStrictEqual(statuses, [200, 404, 500, 202])
      yield* Effect.promise(() => send(port, "/stream", { abortAfterFirstChunk: true }))
      yield* Effect.promise(() => send(port, "/raw-stream", { abortAfterFirstChunk: true }))
      yield* Effect.promise(() => send(port, "/broken"))
      yield* waitFor(() => sink.lines().length >= 7)

      const lines = sink.parsed().map((line) => line.annotations)
      const byRoute = new Map(lines.map((line) => [line.route, line]))
      assert.strictEqual(byRoute.get("/ok")?.status, 200)
      assert.strictEqual(byRoute.get("/ok")?.requestId, "client-id:1.2_3-4")
      assert.strictEqual(byRoute.get("/nowhere")?.status, 404)
      assert.match(byRoute.get("/nowhere")!.requestId, UUID)
      assert.strictEqual(byRoute.get("/boom")?.status, 500)
      assert.match(byRoute.get("/boom")!.requestId, UUID)
      assert.strictEqual(byRoute.get("/stream")?.status, 499)
      assert.strictEqual(byRoute.get("/accepted")?.status, 202)
      // The client left: 499. The source broke off: 502 (the Kiro relay's upstream dropping mid-stream).
      assert.strictEqual(byRoute.get("/raw-stream")?.status, 499)
      assert.strictEqual(byRoute.get("/broken")?.status, 502)
      assert.isFalse(sink.lines().some((line) => line.includes("secret")))
    })))

  it.live("writes the line Logger.formatJson wrote for the same request (fields, order, types)", () =>
    Effect.scoped(Effect.gen(function*() {
      const sink = collecting()
      const port = yield* serveProbe(sink.writer)
      yield* Effect.promise(() => send(port, "/ok?q=1", { headers: { "x-request-id": "same-shape" } }))
      yield* waitFor(() => sink.lines().length >= 1)
      const ours = JSON.parse(sink.lines()[0]!)

      const logged: Array<string> = []
      yield* Effect.logInfo("request").pipe(
        Effect.annotateLogs({
          service: "probe",
          requestId: "same-shape",
          method: "GET",
          route: "/ok",
          status: 200,
          durationMs: 0.5
        }),
        Effect.provide(Logger.layer([Logger.map(Logger.formatJson, (line) => void logged.push(line))]))
      )
      const theirs = JSON.parse(logged[0]!)
      assert.deepStrictEqual(Object.keys(ours), Object.keys(theirs))
      assert.deepStrictEqual(Object.keys(ours.annotations), Object.keys(theirs.annotations))
      const stable = (line: any) => ({
        ...line,
        timestamp: typeof line.timestamp,
        fiberId: typeof line.fiberId,
        annotations: { ...line.annotations, durationMs: typeof line.annotations.durationMs }
      })
      assert.deepStrictEqual(stable(ours), stable(theirs))
      assert.isTrue(!Number.isNaN(Date.parse(ours.timestamp)))
    })))

  it("formats timestamps and durations exactly as toISOString and JSON of the rounded number would", () => {
    // The cached-prefix timestamp across second, minute, day and year boundaries, and within one second.
    const instants = [
      0,
      999,
      1000,
      1_767_225_599_999,
      1_767_225_600_000,
      1_767_225_600_001,
      1_700_000_000_123,
      1_700_000_000_987
    ]
    let seed = 7
    const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647
    for (let i = 0; i < 5000; i++) instants.push(1_600_000_000_000 + Math.floor(next() * 4e11))
    for (const t of instants) assert.strictEqual(isoTimestamp(t), new Date(t).toISOString(), String(t))
    // The same second twice, then an earlier one: the cache follows the clock either way.
    assert.strictEqual(isoTimestamp(1_700_000_000_500), "2023-11-14T22:13:20.500Z")
    assert.strictEqual(isoTimestamp(1_699_999_999_005), "2023-11-14T22:13:19.005Z")
    const durations = [0, 0.0004, 0.0005, 0.001, 0.05, 0.5, 1, 1.2, 3, 10.01, 999.9995, 12345.678, 1e9 + 0.25]
    for (let i = 0; i < 5000; i++) durations.push(next() * (i % 5 === 0 ? 100_000 : 20))
    for (const ms of durations) assert.strictEqual(durationText(ms), String(Math.round(ms * 1000) / 1000), String(ms))
  })

  it.live("under concurrency every line is complete and written once; sequential requests keep their order", () =>
    Effect.scoped(Effect.gen(function*() {
      const sink = collecting()
      const port = yield* serveProbe(sink.writer)
      const N = 300
      const statuses = yield* Effect.promise(() =>
        Promise.all(
          Array.from({ length: N }, (_, i) => send(port, `/ok?i=${i}`, { headers: { "x-request-id": `c-${i}` } }))
        )
      )
      assert.isTrue(statuses.every((status) => status === 200))
      for (let i = 0; i < 50; i++) {
        yield* Effect.promise(() => send(port, "/ok", { headers: { "x-request-id": `s-${i}` } }))
      }
      yield* waitFor(() => sink.lines().length >= N + 50)

      // Every chunk ends on a line boundary: no line is ever split across writes.
      assert.isTrue(sink.chunks.every((chunk) => chunk.endsWith("\n")))
      const ids = sink.parsed().map((line) => line.annotations.requestId)
      assert.strictEqual(ids.length, N + 50)
      assert.deepStrictEqual(
        ids.filter((id) => id.startsWith("c-")).sort(),
        Array.from({ length: N }, (_, i) => `c-${i}`).sort()
      )
      assert.deepStrictEqual(ids.filter((id) => id.startsWith("s-")), Array.from({ length: 50 }, (_, i) => `s-${i}`))
    })))

  it.live("writes nothing when the minimum log level is above INFO", () =>
    Effect.scoped(Effect.gen(function*() {
      const sink = collecting()
      const port = yield* serveProbe(sink.writer, Layer.succeed(References.MinimumLogLevel, "Warn"))
      assert.strictEqual(yield* Effect.promise(() => send(port, "/ok")), 200)
      yield* Effect.sleep("50 millis")
      sink.writer.flush()
      assert.deepStrictEqual(sink.lines(), [])
    })))
})

describe("line writer", () => {
  it("joins the lines of one turn into one write, in order, and flushes on demand", async () => {
    const sink = collecting()
    for (let i = 0; i < 10; i++) sink.writer.write(`line ${i}`)
    assert.deepStrictEqual(sink.chunks, [])
    await new Promise((r) => setImmediate(r))
    assert.deepStrictEqual(sink.chunks, [Array.from({ length: 10 }, (_, i) => `line ${i}\n`).join("")])
    sink.writer.write("late")
    sink.writer.flush()
    assert.strictEqual(sink.chunks[1], "late\n")
  })

  it("bounds a turn's buffer: a flood is written in bounded chunks without waiting for the turn to end", () => {
    const sink = collecting()
    for (let i = 0; i < 10_000; i++) sink.writer.write(String(i))
    assert.isAbove(sink.chunks.length, 1)
    sink.writer.flush()
    assert.deepStrictEqual(sink.lines(), Array.from({ length: 10_000 }, (_, i) => String(i)))
  })

  it("the stderr writer flushes lines queued in the turn that calls process.exit", async () => {
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(import.meta.dirname, "fixtures/accessLogExit.ts"), "5"],
        (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr })
      )
    })
    assert.strictEqual(run.code, 0)
    const ids = run.stderr.split("\n").filter((line) => line !== "").map((line) =>
      JSON.parse(line).annotations.requestId
    )
    assert.deepStrictEqual(ids, ["exit-0", "exit-1", "exit-2", "exit-3", "exit-4"])
  })
})

describe("access log of bin/vdb serve", () => {
  let server: RunningServer
  const scope = Effect.runSync(Scope.make())
  beforeAll(async () => {
    // A throwaway PostgreSQL database: the server starts in a second or two (PGlite takes far longer here).
    const db = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    server = await startServer({
      DATABASE_URL: db.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_DATA_DIR: tempDataDir()
    }, ["api", "gateway", "site"])
  }, 90_000)
  afterAll(async () => {
    await server?.stop()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  it("records the true status on every service, and a client request id only when well-formed", async () => {
    const { api, gateway, site } = server.ports
    assert.strictEqual(await send(api, "/v1/nothing", { headers: { "x-request-id": "req-404" } }), 404)
    assert.strictEqual(await send(api, "/v1/vuln/CVE-2021-44228", { headers: { "x-request-id": "req-401" } }), 401)
    assert.strictEqual(await send(gateway, "/nothing", { headers: { "x-request-id": "y".repeat(300) } }), 404)
    assert.strictEqual(await send(site, "/healthz", { headers: { "x-request-id": "<script>" } }), 200)

    let lines: Array<Line> = []
    for (let i = 0; i < 50 && lines.length < 4; i++) {
      await new Promise((r) => setTimeout(r, 50))
      lines = server.output().stderr.split("\n").flatMap((text) => {
        try {
          const parsed = JSON.parse(text)
          const line = parsed.annotations ?? parsed
          return typeof line.requestId === "string" && line.route !== "/readyz" ? [line as Line] : []
        } catch {
          return []
        }
      })
    }
    const find = (service: string, route: string) => lines.find((l) => l.service === service && l.route === route)
    assert.deepStrictEqual([find("api", "/v1/nothing")?.status, find("api", "/v1/nothing")?.requestId], [
      404,
      "req-404"
    ])
    assert.strictEqual(find("api", "/v1/vuln/CVE-2021-44228")?.status, 401)
    assert.strictEqual(find("gateway", "/nothing")?.status, 404)
    assert.match(find("gateway", "/nothing")!.requestId, UUID)
    assert.strictEqual(find("site", "/healthz")?.status, 200)
    assert.match(find("site", "/healthz")!.requestId, UUID)
  }, 30_000)
})
