import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"

/** The health routes every service serves (`HealthRoutes`); the route fallback counts them as routes. */
export const HEALTH_PATHS = ["/healthz", "/readyz"] as const

/**
 * `/healthz`: the process is alive. `/readyz`: the database answers within two
 * seconds, else 503 (a load balancer stops sending traffic).
 */
export const HealthRoutes = Layer.mergeAll(
  HttpRouter.add("GET", HEALTH_PATHS[0], HttpServerResponse.jsonUnsafe({ status: "ok" })),
  HttpRouter.add(
    "GET",
    HEALTH_PATHS[1],
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return yield* sql`SELECT 1`.pipe(
        Effect.timeout("2 seconds"),
        Effect.as(HttpServerResponse.jsonUnsafe({ status: "ready" })),
        Effect.catchCause(() =>
          Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "unavailable", reason: "database" }, { status: 503 }))
        )
      )
    })
  )
)
