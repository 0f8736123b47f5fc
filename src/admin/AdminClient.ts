import * as NodeSocket from "@effect/platform-node/NodeSocket"
import type { Config } from "effect"
import { Context, Effect, Layer } from "effect"
import type { RpcClientError, RpcGroup } from "effect/rpc"
import { RpcClient, RpcTest } from "effect/rpc"
import type { Socket } from "effect/socket"
import { DataDir } from "../config/AppConfig.ts"
import type { AdminRpcHandlers } from "./AdminRpcHandlers.ts"
import { AdminRpcs } from "./AdminRpcs.ts"
import { adminSocketPath, isServing } from "./AdminSocket.ts"
import { layerNdjson } from "./NdjsonFraming.ts"

type AdminClientShape = RpcClient.RpcClient<RpcGroup.Rpcs<typeof AdminRpcs>, RpcClientError.RpcClientError>

/**
 * The CLI's handle on the administrative operations: the running server over
 * its admin socket when one answers, otherwise the same handlers in-process on
 * the same database (PGlite admits a single process, so the CLI must not open
 * the database while a server holds it).
 */
export class AdminClient extends Context.Service<AdminClient, AdminClientShape>()("vdb/admin/AdminClient") {
  static readonly layerSocket = (path: string) =>
    Layer.effect(AdminClient, RpcClient.make(AdminRpcs)).pipe(
      Layer.provide(RpcClient.layerProtocolSocket()),
      Layer.provide(layerNdjson),
      Layer.provide(NodeSocket.layerNet({ path }))
    )

  /** The handlers (and the domains behind them) are loaded only when the CLI runs them itself. */
  static readonly layerInProcess = Layer.unwrap(
    Effect.promise(() => import("./AdminRpcHandlers.ts")).pipe(
      Effect.map(({ AdminRpcHandlers }) =>
        Layer.effect(AdminClient, RpcTest.makeClient(AdminRpcs)).pipe(Layer.provide(AdminRpcHandlers))
      )
    )
  )

  /** Socket when a server answers on this data directory, in-process otherwise (on the app's services). */
  static readonly layer = <E, R>(
    app: Layer.Layer<Layer.Services<typeof AdminRpcHandlers>, E, R>
  ): Layer.Layer<AdminClient, E | Socket.SocketError | Config.ConfigError, R> =>
    Layer.unwrap(Effect.gen(function*() {
      const path = adminSocketPath(yield* DataDir)
      const chosen: Layer.Layer<AdminClient, E | Socket.SocketError, R> = (yield* isServing(path))
        ? AdminClient.layerSocket(path)
        : AdminClient.layerInProcess.pipe(Layer.provide(app))
      return chosen
    }))
}
