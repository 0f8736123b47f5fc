import { NodeHttpServer } from "@effect/platform-node"
import type { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { FetchHttpClient, HttpRouter, HttpServer } from "effect/http"
import type { SqlClient } from "effect/sql"
import { createServer } from "node:http"
import type { Invalidation } from "../../../src/db/Invalidation.ts"
import { GatewayRoutes } from "../../../src/gateway/GatewayRoutes.ts"
import { ManageClient } from "../../../src/gateway/manage/ManageClient.ts"
import { InferenceLog } from "../../../src/inference/InferenceLog.ts"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { ROUTER_CONFIG } from "../../../src/server/RouterConfig.ts"
import { ServiceKeys } from "../../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { SecretBoxTest } from "../../support/secrets.ts"

export interface ManagedGateway {
  readonly url: string
  readonly orgs: Organizations["Service"]
  readonly providerKeys: ProviderKeys["Service"]
  readonly serviceKeys: ServiceKeys["Service"]
  close(): Promise<void>
}

/**
 * The gateway routes as the server mounts them (management included), on real services over one
 * database; `config` replaces the environment as the configuration (e.g. a provider's base URL).
 */
export const startManagedGateway = async (
  database: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | Invalidation>,
  config?: Record<string, string>
): Promise<ManagedGateway> => {
  const services = Layer.mergeAll(ServiceKeys.layer, ProviderKeys.layer, InferenceLog.layer).pipe(
    Layer.provideMerge(Organizations.layer),
    Layer.provideMerge(Layer.merge(database, SecretBoxTest))
  )
  const app = HttpRouter.serve(GatewayRoutes, {
    disableLogger: true,
    disableListenLog: true,
    routerConfig: ROUTER_CONFIG
  }).pipe(
    Layer.provideMerge(services),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provide(config === undefined ? Layer.empty : ConfigProvider.layer(ConfigProvider.fromUnknown(config)))
  )
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(app, scope))
  const { address } = Context.get(context, HttpServer.HttpServer)
  return {
    url: `http://127.0.0.1:${"port" in address ? address.port : 0}`,
    orgs: Context.get(context, Organizations),
    providerKeys: Context.get(context, ProviderKeys),
    serviceKeys: Context.get(context, ServiceKeys),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** An organization without request limits (management calls count against them like API calls). */
export const newOrg = (gateway: ManagedGateway, name: string) =>
  Effect.runPromise(gateway.orgs.create({ name, perMinute: 0, perWeek: 0 }))

/** Runs `f` with the typed client signed in as `org`. */
export const withClient = <A, E>(
  gateway: ManagedGateway,
  org: { readonly uuid: string; readonly secret: string },
  f: (client: ManageClient["Service"]) => Effect.Effect<A, E>
): Promise<A> =>
  Effect.runPromise(
    Effect.flatMap(ManageClient, f).pipe(
      Effect.provide(
        ManageClient.layer({
          baseUrl: gateway.url,
          credentials: { orgUuid: org.uuid, secret: Redacted.make(org.secret) }
        }).pipe(Layer.provide(FetchHttpClient.layer))
      )
    )
  )
