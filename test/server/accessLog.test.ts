import { randomBytes } from "node:crypto"
import { createServer, request as httpRequest } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { Context, Effect, Exit, Layer, Logger, Scope, Stream } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { accessLog } from "../../src/server/AccessLog.ts"
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
const send = (port: number, path: string, options: { headers?: Record<string, string>; abortAfterFirstChunk?: boolean } = {}) =>
  new Promise<number>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers: options.headers ?? {} }, (res) => {
      res.on("data", () => {
        if (options.abortAfterFirstChunk) {
          req.destroy()
          resolve(res.statusCode ?? 0)
        }
      })
      res.on("end", () => resolve(res.statusCode ?? 0))
    })
    req.on("error", (error) => (options.abortAfterFirstChunk ? resolve(0) : reject(error)))
    req.end()
  })

describe("access log in process", () => {
  it.live("logs the status actually sent: 404 for no route, 500 for a defect, 499 for an aborted stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const lines: Array<Line> = []
      const collector = Logger.make((options) => {
        const { annotations } = Logger.formatStructured.log(options)
        if (annotations.requestId !== undefined) lines.push(annotations as unknown as Line)
      })
      const routes = Layer.mergeAll(
        HttpRouter.add("GET", "/ok", HttpServerResponse.text("ok")),
        HttpRouter.add("GET", "/boom", Effect.die(new Error("boom"))),
        HttpRouter.add(
          "GET",
          "/stream",
          HttpServerResponse.stream(Stream.concat(Stream.make(new TextEncoder().encode("first\n")), Stream.never))
        )
      )
      const server = HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true, middleware: accessLog("probe") }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
        Layer.provide(Logger.layer([collector]))
      )
      const context = yield* Layer.build(server)
      const { port } = Context.get(context, HttpServer.HttpServer).address as unknown as { readonly port: number }

      const statuses = yield* Effect.promise(() =>
        Promise.all([
          send(port, "/ok", { headers: { "x-request-id": "client-id:1.2_3-4" } }),
          send(port, "/nowhere?token=secret", { headers: { "x-request-id": "x".repeat(129) } }),
          send(port, "/boom", { headers: { "x-request-id": "bad id\"}" } })
        ])
      )
      assert.deepStrictEqual(statuses, [200, 404, 500])
      yield* Effect.promise(() => send(port, "/stream", { abortAfterFirstChunk: true }))
      for (let i = 0; i < 50 && lines.length < 4; i++) yield* Effect.sleep("20 millis")

      const byRoute = new Map(lines.map((line) => [line.route, line]))
      assert.strictEqual(byRoute.get("/ok")?.status, 200)
      assert.strictEqual(byRoute.get("/ok")?.requestId, "client-id:1.2_3-4")
      assert.strictEqual(byRoute.get("/nowhere")?.status, 404)
      assert.match(byRoute.get("/nowhere")!.requestId, UUID)
      assert.strictEqual(byRoute.get("/boom")?.status, 500)
      assert.match(byRoute.get("/boom")!.requestId, UUID)
      assert.strictEqual(byRoute.get("/stream")?.status, 499)
    })))
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
    assert.deepStrictEqual([find("api", "/v1/nothing")?.status, find("api", "/v1/nothing")?.requestId], [404, "req-404"])
    assert.strictEqual(find("api", "/v1/vuln/CVE-2021-44228")?.status, 401)
    assert.strictEqual(find("gateway", "/nothing")?.status, 404)
    assert.match(find("gateway", "/nothing")!.requestId, UUID)
    assert.strictEqual(find("site", "/healthz")?.status, 200)
    assert.match(find("site", "/healthz")!.requestId, UUID)
  }, 30_000)
})
