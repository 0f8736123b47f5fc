import { Effect, Layer, Option } from "effect"
import { DatabasePoolSize, DatabaseUrl } from "../src/config/AppConfig.ts"
import { DatabaseError, layerPostgres } from "../src/db/Database.ts"
import { appOver } from "./App.ts"

/** Production: PostgreSQL from `DATABASE_URL` (required), pooled. */
export const Live = appOver(Layer.unwrap(Effect.gen(function*() {
  const url = yield* DatabaseUrl
  if (Option.isNone(url)) return yield* new DatabaseError({ message: "DATABASE_URL is not set" })
  return layerPostgres(url.value, yield* DatabasePoolSize)
})))
