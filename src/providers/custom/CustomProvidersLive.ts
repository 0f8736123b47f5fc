import { Layer } from "effect"
import { CustomProviders } from "./CustomProviders.ts"
import { Resolver } from "./Resolver.ts"
import { VettingPolicy } from "./VettingPolicy.ts"

/** Production vetting: the system resolver and every reserved range refused (no switch exists to loosen it). */
export const ProductionVetting = Layer.merge(Resolver.layer, VettingPolicy.layer)

/** The registry over SQL with production vetting; needs `SqlClient` and `ProviderKeys`. */
export const CustomProvidersLive = CustomProviders.layer.pipe(Layer.provide(ProductionVetting))

/**
 * In memory, for unit tests of other domains: production vetting over a
 * resolver that answers nothing, so a registration there never touches DNS.
 */
export const CustomProvidersMemory = CustomProviders.layerMemory.pipe(
  Layer.provide(Layer.merge(Resolver.layerFrom(() => undefined), VettingPolicy.layer))
)
