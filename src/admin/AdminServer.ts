import { chmodSync, mkdirSync } from "node:fs"
import { NodeSocketServer } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { RpcSerialization, RpcServer } from "effect/rpc"
import { DataDir } from "../config/AppConfig.ts"
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
 * Serves the admin RPC group on `$VDB_DATA_DIR/admin.sock`, mode 0600: the
 * file permissions are the access control.
 */
export const AdminServerLayer = Layer.unwrap(Effect.gen(function*() {
  const dataDir = yield* DataDir
  const path = adminSocketPath(dataDir)
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  if (!(yield* removeStaleSocket(path))) return yield* new AdminSocketBusy({ path })
  const restrict = Layer.effectDiscard(Effect.sync(() => chmodSync(path, 0o600)))
  return RpcServer.layer(AdminRpcs).pipe(
    Layer.provide(AdminRpcHandlers),
    Layer.provide(RpcServer.layerProtocolSocketServer),
    Layer.provide(RpcSerialization.layerNdjson),
    Layer.provideMerge(restrict),
    Layer.provide(NodeSocketServer.layer({ path })),
    Layer.catchTag("SocketServerError", (cause) => Layer.effectDiscard(Effect.fail(new AdminSocketUnavailable({ path, cause }))))
  )
}))
