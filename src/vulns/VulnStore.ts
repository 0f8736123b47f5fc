import { Context, Layer } from "effect"
import { makeMemoryVulnStore } from "./MemoryVulnStore.ts"
import { makeSqlVulnStore } from "./SqlVulnStore.ts"
import type { VulnStoreShape } from "./VulnStoreShapes.ts"

/**
 * The vulnerability store: per-source records (raw and normalised), the alias
 * graph and exploit records. Ingestion writes it; the API reads it. Every write
 * method is one transaction, so no reader sees half a batch.
 */
export class VulnStore extends Context.Service<VulnStore, VulnStoreShape>()("vdb/vulns/VulnStore") {
  /** PostgreSQL (and PGlite) through `SqlClient`. */
  static readonly layer = Layer.effect(VulnStore, makeSqlVulnStore)
  /** In memory, for unit tests; same behaviour as `layer`. */
  static readonly layerMemory = Layer.effect(VulnStore, makeMemoryVulnStore)
}
