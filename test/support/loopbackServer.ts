import { NodeHttpServer } from "@effect/platform-node"
import { Layer } from "effect"
import { createServer } from "node:http"
import { AccessLogWriter } from "../../src/server/AccessLog.ts"
import { InterceptingServer, ServerInterceptors } from "../../src/server/InterceptingServer.ts"
import type { LineWriter } from "../../src/server/LineWriter.ts"

const discard: LineWriter = { write: () => undefined, flush: () => undefined }

/**
 * A loopback server for a service's routes: an `InterceptingServer` whose interceptors the routes
 * fill, as `bin/vdb serve` runs it (`listener`: what they answer below the router, with its
 * access-log lines to `accessLog`, discarded unless given), or a plain one (`router`: every
 * request through `HttpRouter`).
 */
export const loopbackServer = (path: "listener" | "router", accessLog: LineWriter = discard) => {
  if (path === "router") return NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })
  const server = new InterceptingServer()
  return Layer.mergeAll(
    NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }),
    Layer.succeed(ServerInterceptors, server.interceptors),
    Layer.succeed(AccessLogWriter, accessLog)
  )
}
