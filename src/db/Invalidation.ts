import { Context, Layer } from "effect"
import { type InvalidationBus, makeLocalBus } from "./InvalidationBus.ts"
import { makePostgresBus } from "./PostgresInvalidationBus.ts"

/**
 * The invalidation bus: every write that changes something a process caches
 * publishes it here, and every in-process cache subscribes and evicts. On
 * PostgreSQL it is `LISTEN/NOTIFY`, so a change made by one process reaches
 * all of them; on PGlite (one process per data directory) it is in-process.
 *
 * `publish` runs this process's evictions before it returns (the next request
 * here never sees the old value), then tells the other processes. The cache
 * TTL stays only as the fallback for a notification that is lost; a lost
 * LISTEN connection is answered with `All` once it is back.
 *
 * Required by every layer that caches or publishes, and provided once with the database (the
 * database layers in `Database.ts`: PostgreSQL's bus, or an in-process one for PGlite); a test
 * that builds a domain alone provides `layerMemory`.
 */
export class Invalidation extends Context.Service<Invalidation, InvalidationBus>()("vdb/db/Invalidation") {
  /** A fresh in-process bus: PGlite, and tests that build a domain without a database. */
  static readonly layerMemory = Layer.sync(Invalidation, () => makeLocalBus().bus)

  /** PostgreSQL `LISTEN/NOTIFY` on one dedicated session (not a pool slot), reconnecting with backoff. */
  static readonly layerPostgres = Layer.effect(Invalidation, makePostgresBus)
}
