import { Layer } from "effect"
import { CustomProviders } from "../../providers/custom/CustomProviders.ts"
import { ProductionVetting } from "../../providers/custom/CustomProvidersLive.ts"
import { CustomRelay } from "./CustomRelay.ts"

/** The request path's custom providers and the registry they read (one instance), with production vetting. */
export const CustomRelayLive = CustomRelay.layer.pipe(
  Layer.provideMerge(CustomProviders.layer),
  Layer.provide(ProductionVetting)
)
