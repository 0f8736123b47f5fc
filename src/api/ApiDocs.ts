import { Effect, Scope } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiScalar } from "effect/http-api"
import { Api } from "./Api.ts"

/**
 * `/docs`: Effect's own Scalar page for the API, built on the first request.
 * `HttpApiScalar.layer` loads its 3 MB inline script when the layer is built,
 * which kept about 12 MiB of strings in every idle server (bench/memory.ts);
 * built lazily, only a server whose docs are read pays for them.
 */
export const ApiDocs = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const scope = yield* Effect.scope
  const page = yield* Effect.cached(
    HttpRouter.toHttpEffect(HttpApiScalar.layer(Api, { path: "/docs" })).pipe(Scope.provide(scope))
  )
  yield* router.add("GET", "/docs", Effect.flatten(page))
}))
