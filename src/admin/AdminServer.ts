import { chmodSync, mkdirSync } from "node:fs"
import { NodeSocketServer } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { RpcServer } from "effect/rpc"
import { SocketServer } from "effect/socket"
import { DataDir } from "../config/AppConfig.ts"
import { layerNdjson } from "./NdjsonFraming.ts"
import { AdminRpcHandlers, AdminRpcs } from "./AdminRpcs.ts"
import { adminSocketPath, removeStaleSocket } from "./AdminSocket.ts"

export class AdminSocketUnavailable extends Schema.TaggedError<AdminSocketUnavailable>()("AdminSocketUnavailable", {
  path: Schema.String,
  cause: Schema.Defect()
}) {
  override get message() {
    return `cannot listen on the admin socket ${this.path}: ${String((this.cause as { cause?: unknown })?.cause ?? this.cause)}`
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

/** Serves the admin RPC group on the listening admin socket. */
export const AdminRpcServer = RpcServer.layer(AdminRpcs).pipe(
  Layer.provide(AdminRpcHandlers),
  Layer.provide(RpcServer.layerProtocolSocketServer),
  Layer.provide(layerNdjson)
)
