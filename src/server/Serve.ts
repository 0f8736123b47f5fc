import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { AdminRpcServer } from "../admin/AdminServer.ts"
import { DataDir, Host, ServicePorts } from "../config/AppConfig.ts"
import { SyncScheduleLive } from "../feeds/SyncSchedule.ts"
import { NormaliseResumeLayer } from "../ingest/NormaliseResume.ts"
import { registerInFlight } from "../metrics/HttpMetrics.ts"
import { OrgLabel } from "../metrics/OrgLabel.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { accessLog } from "./AccessLog.ts"
import { InterceptingServer, ServerInterceptors } from "./InterceptingServer.ts"
import { metricsService } from "./MetricsService.ts"
import { ROUTER_CONFIG } from "./RouterConfig.ts"
import { PORT_VARIABLES, routesOf, type ServiceName } from "./Services.ts"
import { StopLog, stopPart } from "./StopLog.ts"
import { systemCode, systemReason } from "./SystemError.ts"

const hostPort = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`
const urlOf = (host: string, port: number) => `http://${hostPort(host, port)}`

/** A service could not bind its address; names the address and the variable that sets it. */
export class ListenFailed extends Schema.TaggedError<ListenFailed>()("ListenFailed", {
  address: Schema.String,
  variable: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot listen on ${this.address} (${this.variable}): ${this.reason}`
  }
}

/** A host that is not this machine's is VDB_HOST's fault; anything else (busy, privileged) the port's. */
export const listenFailed = (portVariable: string, host: string, port: number) => (cause: unknown) =>
  new ListenFailed({
    address: hostPort(host, port),
    variable: ["EADDRNOTAVAIL", "ENOTFOUND", "EAI_AGAIN"].includes(systemCode(cause) ?? "")
      ? "VDB_HOST"
      : portVariable,
    reason: systemReason(cause, "listen failed")
  })

/**
 * One service on its port. The server is an `InterceptingServer`, so routes
 * may answer their measured hot requests below the router (the gateway's
 * inference relay, `src/gateway/RelayListener.ts`); everything else goes
 * through `HttpRouter` and the access-log middleware.
 */
const httpService = (name: ServiceName, host: string, port: number) =>
  Layer.unwrap(Effect.gen(function*() {
    const server = new InterceptingServer()
    const stopLog = yield* StopLog
    stopLog.watch(name, server)
    const listen = NodeHttpServer.make(() => server, { host, port, gracefulShutdownTimeout: "20 seconds" }).pipe(
      Effect.mapError(listenFailed(PORT_VARIABLES[name], host, port))
    )
    // In flight, read from the server's own count at scrape time: nothing per request.
    const inFlight = Layer.effectDiscard(Effect.gen(function*() {
      const context = yield* Effect.context<never>()
      yield* Effect.acquireRelease(
        Effect.sync(() => registerInFlight(name, server, context)),
        (registration) => Effect.sync(() => registration.remove())
      )
    }))
    return HttpRouter.serve(routesOf(name), {
      disableLogger: true,
      disableListenLog: true,
      routerConfig: ROUTER_CONFIG,
      middleware: accessLog(name, { relays: name === "gateway" })
    }).pipe(
      Layer.provide(Layer.mergeAll(
        Layer.effect(HttpServer.HttpServer, listen),
        NodeHttpServer.layerHttpServices,
        Layer.succeed(ServerInterceptors, server.interceptors),
        // VDB_METRICS_ORG_LABEL (metrics/OrgLabel.ts): the gateway's per-organization series.
        OrgLabel.layer
      )),
      Layer.merge(inFlight)
    )
  }))

/**
 * The start-up announcement is a log line like every other (JSON on stderr);
 * the first-organization hint only while there is none to use. Built after
 * every service, so its finalizer, the first stop line, runs before any of theirs.
 */
const announce = (names: ReadonlyArray<ServiceName>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const stopLog = yield* StopLog
    yield* Effect.addFinalizer(() => stopLog.stopping)
    const host = yield* Host
    const ports = yield* ServicePorts
    const dataDir = yield* DataDir
    yield* Effect.logInfo("vdb is serving").pipe(Effect.annotateLogs({
      ...Object.fromEntries(names.map((name) => [name, urlOf(host, ports[name])])),
      dataDirectory: dataDir
    }))
    const orgs = yield* Organizations
    if ((yield* orgs.list()).length === 0) {
      yield* Effect.logInfo("no organization yet; create the first one with: bin/vdb org create --name NAME")
    }
  }))

/**
 * The selected HTTP services plus the admin socket. Closing the layer (SIGTERM,
 * SIGINT) stops accepting, drains in-flight requests, then closes the database;
 * each part's stop is timed for the stop line (StopLog.ts).
 */
export const serveLayer = (names: ReadonlyArray<ServiceName>, options: { readonly admin: boolean } = { admin: true }) =>
  Layer.unwrap(Effect.gen(function*() {
    const host = yield* Host
    const ports = yield* ServicePorts
    return announce(names).pipe(
      Layer.provide(Layer.mergeAll(
        // Under --workers only worker 1 (src/server/Workers.ts).
        options.admin
          ? stopPart("admin requests and ingest runs", Layer.mergeAll(AdminRpcServer, NormaliseResumeLayer))
          : Layer.empty,
        // The feeds' schedule (VDB_SYNC); under --workers only worker 1 joins the cluster.
        options.admin ? stopPart("feed sync runs", SyncScheduleLive) : Layer.empty,
        ...names.map((name) => stopPart(`requests in flight on ${name}`, httpService(name, host, ports[name]))),
        metricsService(host, (port) => listenFailed("VDB_METRICS_PORT", host, port))
      ))
    )
  }))
