import { Context, Effect, Layer, PubSub, Redacted, Stream } from "effect"
import { FetchHttpClient, HttpRouter, HttpServer } from "effect/http"
import type { SqlClient } from "effect/sql"
import { ApiClient, type CredentialMode } from "../../src/api/ApiClient.ts"
import { ApiRoutesWith } from "../../src/api/ApiRoutes.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { RateLimiter } from "../../src/ratelimit/RateLimiter.ts"
import type { SecretBox } from "../../src/secrets/SecretBox.ts"
import type { LineWriter } from "../../src/server/LineWriter.ts"
import { ROUTER_CONFIG } from "../../src/server/RouterConfig.ts"
import { UsageLog } from "../../src/usage/UsageLog.ts"
import type { ExploitRecord } from "../../src/vulns/Normalised.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import type { Lookup, SourceRecord } from "../../src/vulns/VulnStoreShapes.ts"
import { loopbackServer } from "../support/loopbackServer.ts"

const counts = { references: 2, problemTypes: 1, metrics: 1, affected: 1, impacts: 0, descriptions: 1, scorecards: 0 }

export const cveRecord = (id: string, source: string) => ({
  dataType: "CVE_RECORD",
  dataVersion: "5.1",
  cveMetadata: { cveId: id, assignerOrgId: "8254265b-2729-46b6-b9e3-3dfca2d5bfca", state: "PUBLISHED" },
  containers: { cna: { title: `${id} from ${source}` }, adp: [{ x_dataSource: source, x_aliases: [] }] }
})

export const record = (source: SourceRecord["source"], identifier: string, processing = false): SourceRecord => ({
  source,
  identifier,
  record: processing ? null : cveRecord(identifier, source),
  recordJson: processing ? null : JSON.stringify(cveRecord(identifier, source)),
  processing,
  counts,
  gcve: source === "mitre",
  fetchedAt: new Date("2026-01-10T00:00:00Z"),
  enrichedAt: processing ? null : new Date("2026-01-11T00:00:00Z")
})

/** A small in-test store: enough to drive every branch of the handlers. */
export const fixtureStore = (data: {
  readonly lookups: Record<string, Lookup>
  readonly exploits: Record<string, ReadonlyArray<ExploitRecord>>
}) =>
  Layer.effect(
    VulnStore,
    Effect.gen(function*() {
      const touched = yield* PubSub.unbounded<ReadonlyArray<string>>()
      const calls = { lookup: 0 }
      return Object.assign(
        VulnStore.of({
          lookup: (id) =>
            id === "CVE-2000-0500" ? Effect.die(new Error("store exploded")) : Effect.sync(() => {
              calls.lookup++
              return data.lookups[id] ?? { aliases: [], records: [] }
            }),
          exploits: (id, page) =>
            Effect.sync(() => {
              const all = [...(data.exploits[id] ?? [])].sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0))
              const summary: Record<string, number> = {}
              for (const e of all) {
                const key = Object.keys(e.details)[0] ?? "other"
                summary[key] = (summary[key] ?? 0) + 1
              }
              return {
                count: all.length,
                summary,
                exploits: all.slice(page.offset, page.offset + page.limit).map((e) =>
                  page.includeContent ? e : {
                    ...e,
                    details: Object.fromEntries(
                      Object.entries(e.details).map(([k, v]) => [
                        k,
                        Object.fromEntries(Object.entries(v).filter(([f]) => !/Content$/.test(f)))
                      ])
                    )
                  }
                )
              }
            }),
          touched: Stream.fromPubSub(touched),
          putRaw: () => Effect.die("not in fixture"),
          putNormalised: () => Effect.die("not in fixture"),
          failed: () => Effect.succeed([]),
          pendingRaw: () => Effect.succeed([]),
          refreshStatistics: () => Effect.void
        }),
        { publishTouched: (ids: ReadonlyArray<string>) => PubSub.publish(touched, ids), calls }
      )
    })
  )

/**
 * The real API routes on a loopback port; yields the base URL (`http://127.0.0.1:<port>/v1`).
 * `deps` gives `Organizations`, `VulnStore`, `SqlClient`, `SecretBox` and, with a database of its
 * own, that database's `Invalidation` bus; what it does not give the effect requires.
 */
export const serveApi = <A, R>(deps: Layer.Layer<A, never, R>, options?: {
  readonly memoryCounters?: boolean
  /** `listener` (the default) as `bin/vdb serve` runs the API; `router` without the listeners below it. */
  readonly path?: "listener" | "router"
  readonly accessLog?: LineWriter
}) =>
  Effect.gen(function*() {
    const routes = ApiRoutesWith({
      rateLimiter: options?.memoryCounters ? RateLimiter.layerMemory : RateLimiter.layer,
      usageLog: UsageLog.layer
    })
    const server = HttpRouter.serve(routes, {
      disableLogger: true,
      disableListenLog: true,
      routerConfig: ROUTER_CONFIG
    }).pipe(
      Layer.provideMerge(loopbackServer(options?.path ?? "listener", options?.accessLog)),
      Layer.provide(deps)
    )
    const context = yield* Layer.build(server)
    const http = Context.get(context, HttpServer.HttpServer)
    const address = http.address as unknown as { readonly port: number }
    return `http://127.0.0.1:${address.port}/v1`
  })

/** `serveApi` over the test's own services, and a new organization with these limits on it. */
export const serveWithOrg = (
  name: string,
  limits: { readonly perMinute: number; readonly perWeek: number },
  options?: { readonly path?: "listener" | "router"; readonly accessLog?: LineWriter }
) =>
  Effect.gen(function*() {
    const ctx = yield* Effect.context<Organizations | VulnStore | SqlClient.SqlClient | SecretBox>()
    const base = yield* serveApi(Layer.succeedContext(ctx), options)
    const orgs = yield* Organizations
    const org = yield* orgs.create({ name, ...limits })
    return { base, orgs, org }
  })

export const clientFor = (baseUrl: string, orgUuid: string, secret: string, mode: CredentialMode) =>
  Effect.gen(function*() {
    return yield* ApiClient
  }).pipe(
    Effect.provide(
      ApiClient.layer({ baseUrl, credentials: { orgUuid, secret: Redacted.make(secret) }, mode }).pipe(
        Layer.provide(FetchHttpClient.layer)
      )
    )
  )
