import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { DataDir, Host, ServicePorts } from "../config/AppConfig.ts"
import { AdminRpcServer } from "../admin/AdminServer.ts"
import { accessLog } from "./AccessLog.ts"
import { routesOf, type ServiceName } from "./Services.ts"

const urlOf = (host: string, port: number) => `http://${host.includes(":") ? `[${host}]` : host}:${port}`

const httpService = (name: ServiceName, host: string, port: number) =>
  HttpRouter.serve(routesOf(name), {
    disableLogger: true,
    disableListenLog: true,
    middleware: accessLog(name)
  }).pipe(Layer.provide(NodeHttpServer.layer(() => createServer(), { host, port, gracefulShutdownTimeout: "20 seconds" })))

/**
 * The selected HTTP services plus the admin socket. Closing the layer (SIGTERM,
 * SIGINT) stops accepting, drains in-flight requests, then closes the database.
 */
export const serveLayer = (names: ReadonlyArray<ServiceName>) =>
  Layer.unwrap(Effect.gen(function*() {
    const host = yield* Host
    const ports = yield* ServicePorts
    const dataDir = yield* DataDir
    const announce = Layer.effectDiscard(Effect.gen(function*() {
      for (const name of names) {
        yield* Console.log(`vdb ${name.padEnd(7)} ${urlOf(host, ports[name])}`)
      }
      yield* Console.log(`data directory: ${dataDir}`)
      yield* Console.log(`create the first organization: bin/vdb org create --name NAME`)
    }))
    return announce.pipe(
      Layer.provide(Layer.mergeAll(AdminRpcServer, ...names.map((name) => httpService(name, host, ports[name]))))
    )
  }))
