import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { ResponseCache } from "../../src/api/ResponseCache.ts"
import { httpRequestRecorder } from "../../src/metrics/HttpMetrics.ts"
import { OrgLabel } from "../../src/metrics/OrgLabel.ts"

/** The value of one series line in Prometheus text, 0 when absent. */
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

describe("metrics counters", () => {
  it.effect("304 and 429 answers are counted by service and route template; others are not", () =>
    Effect.gen(function*() {
      const context = Context.make(Metric.MetricRegistry, new Map())
      const record = httpRequestRecorder("api")
      record(context, "/v1/vuln/:identifier", "GET", 304, 0.001)
      record(context, "/v1/vuln/:identifier", "GET", 304, 0.001)
      record(context, "/v1/vuln/:identifier", "GET", 429, 0.001)
      record(context, "/v1/vuln/:identifier", "GET", 200, 0.001)
      const text = PrometheusMetrics.formatUnsafe(context)
      assert.strictEqual(valueOf(text, `vdb_http_not_modified_total{service="api",route="/v1/vuln/:identifier"}`), 2)
      assert.strictEqual(valueOf(text, `vdb_http_rate_limited_total{service="api",route="/v1/vuln/:identifier"}`), 1)
      assert.strictEqual(
        valueOf(
          text,
          `vdb_http_request_duration_seconds_count{service="api",route="/v1/vuln/:identifier",method="GET",status_class="3xx"}`
        ),
        2
      )
    }))

  it.effect("the response cache counts a hit per answer served from it and a miss per answer built", () =>
    Effect.gen(function*() {
      const registry = new Map()
      const { service: cache } = yield* ResponseCache.make(5_000).pipe(
        Effect.provideService(Metric.MetricRegistry, registry)
      )
      const built = Effect.succeed({ value: "a", bytes: 100, dependsOn: [] })
      // A handler's own peek before serve, as the /vuln handler does: one miss, not two.
      assert.isUndefined(cache.peek("a"))
      yield* cache.serve("a", built)
      assert.isDefined(cache.peek("a"))
      yield* cache.serve("a", built)
      // A fast path's peek that leaves the request to the handler (a coding not compressed yet): only
      // the handler's serve counts it, one hit for the one request.
      assert.isUndefined(cache.peek<string>("a", (value) => value !== "a"))
      yield* cache.serve("a", built)
      assert.strictEqual(cache.peek<string>("a", (value) => value === "a")?.value, "a")
      const text = PrometheusMetrics.formatUnsafe(Context.make(Metric.MetricRegistry, registry))
      assert.strictEqual(valueOf(text, `vdb_api_response_cache_requests_total{outcome="miss"}`), 1)
      assert.strictEqual(valueOf(text, `vdb_api_response_cache_requests_total{outcome="hit"}`), 4)
    }))
})

describe("organization label", () => {
  it.effect("is off by default; VDB_METRICS_ORG_LABEL=on names the first organizations up to the limit, the rest other", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* OrgLabel)("6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"), "")
      const label = yield* OrgLabel.pipe(
        Effect.provide(OrgLabel.layer),
        Effect.provide(
          ConfigProvider.layer(
            ConfigProvider.fromUnknown({ VDB_METRICS_ORG_LABEL: "on", VDB_METRICS_ORG_LABEL_LIMIT: "2" })
          )
        )
      )
      assert.deepStrictEqual(["a", "b", "a", "c", "b"].map(label), ["a", "b", "a", "other", "b"])
    }))
})
