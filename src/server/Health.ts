import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"

/**
 * `/healthz`: the process is alive. `/readyz`: the database answers within two
 * seconds, else 503 (a load balancer stops sending traffic).
 */
export const HealthRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" })),
  HttpRouter.add(
    "GET",
    "/readyz",
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
