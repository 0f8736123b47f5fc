import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import { Cause, Effect, Layer, Schema } from "effect"
import { RpcServer } from "effect/rpc"
import { Socket, SocketServer } from "effect/socket"
import { chmodSync, mkdirSync } from "node:fs"
import { DataDir } from "../config/AppConfig.ts"
import { AdminRpcHandlers } from "./AdminRpcHandlers.ts"
import { AdminRpcs } from "./AdminRpcs.ts"
import { adminSocketPath, removeStaleSocket } from "./AdminSocket.ts"
import { layerNdjson } from "./NdjsonFraming.ts"

export class AdminSocketUnavailable extends Schema.TaggedError<AdminSocketUnavailable>()("AdminSocketUnavailable", {
  path: Schema.String,
  cause: Schema.Defect()
}) {
  override get message() {
    return `cannot listen on the admin socket ${this.path}: ${
      String((this.cause as { cause?: unknown })?.cause ?? this.cause)
    }`
  }
}

export class AdminSocketBusy extends Schema.TaggedError<AdminSocketBusy>()("AdminSocketBusy", {
  path: Schema.String
}) {
  override get message() {
    return `another vdb server is already serving ${this.path}`
  }
}

/**
 * Listens on `$VDB_DATA_DIR/admin.sock`, mode 0600: the file permissions are
 * the access control. Built before the database is opened, so a CLI started
 * while the server is still starting queues on the socket instead of opening
 * the (single-process) embedded database itself.
 */
export const AdminSocketListener = Layer.unwrap(Effect.gen(function*() {
  const dataDir = yield* DataDir
  const path = adminSocketPath(dataDir)
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  if (!(yield* removeStaleSocket(path))) return yield* new AdminSocketBusy({ path })
  const restrict = Layer.effectDiscard(Effect.sync(() => chmodSync(path, 0o600)))
  const listen = NodeSocketServer.make({ path }).pipe(
    Effect.mapError((cause) => new AdminSocketUnavailable({ path, cause }))
  )
  return restrict.pipe(Layer.provideMerge(Layer.effect(SocketServer.SocketServer, listen)))
}))

/**
 * A CLI that goes away mid-run (Ctrl-C on `vdb ingest`) resets its connection,
 * and the socket server logged that as an unhandled ERROR with a stack trace.
 * A client leaving is not the server's failure: its connection's socket errors
 * are logged at debug level, by kind only. Its run ends as before (the stream
 * is interrupted and the inbox dropped).
 */
const ClientsMayLeave = Layer.effect(
  SocketServer.SocketServer,
  Effect.map(SocketServer.SocketServer, (server) =>
    SocketServer.SocketServer.of({
      address: server.address,
      run: (handler) =>
        server.run((socket) =>
          // The RPC protocol reports its connection's read error as a defect: look at the squashed cause.
          Effect.catchCause(handler(socket), (cause) => {
            const error = Cause.squash(cause)
            return Socket.isSocketError(error)
              ? Effect.logDebug("admin socket: a client's connection ended with an error", {
                reason: error.reason._tag
              })
              : Effect.failCause(cause)
          })
        )
    }))
)

/** Serves the admin RPC group on the listening admin socket. */
export const AdminRpcServer = RpcServer.layer(AdminRpcs).pipe(
  Layer.provide(AdminRpcHandlers),
  Layer.provide(RpcServer.layerProtocolSocketServer.pipe(Layer.provide(ClientsMayLeave))),
  Layer.provide(layerNdjson)
)
