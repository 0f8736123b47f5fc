import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Metric, Redacted } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { randomUUID } from "node:crypto"
import { DeviceGrants } from "../../src/device/DeviceGrants.ts"
import { ToolFailure } from "../../src/mcp/ToolKit.ts"
import { withToolMetrics } from "../../src/metrics/McpMetrics.ts"
import { PostgresTest } from "../support/database.ts"

/** Device-grant steps and poll answers, and MCP tool calls by tool and outcome (docs/operations.md, "Site and MCP"). */
const registry: Metric.MetricRegistry = new Map()
const scrape = () => PrometheusMetrics.formatUnsafe(Context.make(Metric.MetricRegistry, registry))
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}
const client = { name: "vdb-cli", version: "0.1.0", address: "127.0.0.1" }

describe("site and MCP metrics", () => {
  const app = DeviceGrants.layerWith({ lifetimeSeconds: 900, intervalSeconds: 5 }).pipe(
    Layer.provideMerge(PostgresTest),
    Layer.provideMerge(Layer.succeed(Metric.MetricRegistry)(registry))
  )
  layer(app, { excludeTestServices: true })((it) => {
    it.effect("device grants count each step and each poll's answer", () =>
      Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const approved = yield* grants.authorize(client)
        const denied = yield* grants.authorize(client)
        assert.strictEqual((yield* grants.poll(Redacted.value(approved.deviceCode)))._tag, "authorization_pending")
        yield* grants.approve(approved.userCode, randomUUID())
        yield* grants.deny(denied.userCode, randomUUID())
        assert.strictEqual((yield* grants.poll(Redacted.value(approved.deviceCode)))._tag, "issued")
        assert.strictEqual((yield* grants.poll(Redacted.value(denied.deviceCode)))._tag, "access_denied")
        const text = scrape()
        assert.strictEqual(valueOf(text, `vdb_device_grants_total{outcome="authorized"}`), 2)
        assert.strictEqual(valueOf(text, `vdb_device_grants_total{outcome="approved"}`), 1)
        assert.strictEqual(valueOf(text, `vdb_device_grants_total{outcome="denied"}`), 1)
        for (const outcome of ["authorization_pending", "issued", "access_denied"]) {
          assert.strictEqual(valueOf(text, `vdb_device_token_polls_total{outcome="${outcome}"}`), 1, outcome)
        }
      }))

    it.effect("MCP tool calls count by tool and outcome: ok, the failure's code, or error", () =>
      Effect.gen(function*() {
        const handlers = withToolMetrics({
          lookup: (ok: boolean) =>
            ok
              ? Effect.succeed({ text: "", data: null })
              : Effect.fail(new ToolFailure({ code: "unknown_identifier", message: "x" })),
          broken: (_: boolean) => Effect.die("defect")
        } as Record<string, (ok: boolean) => Effect.Effect<unknown, ToolFailure>>)
        yield* handlers.lookup!(true)
        yield* handlers.lookup!(true)
        yield* Effect.flip(handlers.lookup!(false))
        yield* Effect.exit(handlers.broken!(true))
        const text = scrape()
        assert.strictEqual(valueOf(text, `vdb_mcp_tool_calls_total{tool="lookup",outcome="ok"}`), 2)
        assert.strictEqual(valueOf(text, `vdb_mcp_tool_calls_total{tool="lookup",outcome="unknown_identifier"}`), 1)
        assert.strictEqual(valueOf(text, `vdb_mcp_tool_calls_total{tool="broken",outcome="error"}`), 1)
      }))
  })
})
