import { Effect, Metric } from "effect"
import { seriesBy2 } from "./Series.ts"

/**
 * MCP tool calls in /metrics (docs/operations.md, "Site and MCP"), by tool and outcome: `ok`, the
 * tool failure's code (`invalid_argument`, `unknown_identifier`, `not_permitted`, `unavailable`),
 * or `error` for anything else. Tool names are the server's own 31, a fixed set.
 */
const calls = seriesBy2((tool, outcome) =>
  Metric.counter("vdb_mcp_tool_calls_total", {
    description: "MCP tool calls by tool and outcome (ok, a failure code, or error)",
    incremental: true,
    attributes: { tool, outcome }
  })
)

const outcomeOf = (error: unknown): string => {
  const code = typeof error === "object" && error !== null ? (error as { readonly code?: unknown }).code : undefined
  return typeof code === "string" && /^[a-z_]{1,32}$/.test(code) ? code : "error"
}

/** The same handlers, each call counted by its tool's name and outcome. */
export const withToolMetrics = <
  Handlers extends { readonly [tool: string]: (...args: ReadonlyArray<any>) => Effect.Effect<any, any, any> }
>(
  handlers: Handlers
): Handlers =>
  Object.fromEntries(
    Object.entries(handlers).map(([tool, handler]) => [
      tool,
      ((...args: ReadonlyArray<unknown>) =>
        handler(...args).pipe(
          Effect.onExit((exit) =>
            Metric.update(
              calls(
                tool,
                exit._tag === "Success" ? "ok" : outcomeOf(exit.cause.reasons.find((r) => r._tag === "Fail")?.error)
              ),
              1
            )
          )
        )) as unknown as Handlers[string]
    ])
  ) as unknown as Handlers
