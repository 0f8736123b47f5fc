import { Layer } from "effect"
import { randomBytes } from "node:crypto"
import { Invalidation } from "../src/db/Invalidation.ts"
import { InferenceLog } from "../src/inference/InferenceLog.ts"
import { Organizations } from "../src/orgs/Organizations.ts"
import { CustomProvidersMemory } from "../src/providers/custom/CustomProvidersLive.ts"
import { MasterKey } from "../src/secrets/MasterKey.ts"
import { SecretBox } from "../src/secrets/SecretBox.ts"
import { ServiceKeys } from "../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../src/vault/ProviderKeys.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"

/** Unit tests: every domain in memory over one in-process invalidation bus, secrets under a throwaway master key. */
export const Test = CustomProvidersMemory.pipe(
  Layer.provideMerge(
    Layer.mergeAll(ServiceKeys.layerMemory, ProviderKeys.layerMemory, VulnStore.layerMemory, InferenceLog.layerMemory)
  ),
  Layer.provideMerge(Organizations.layerMemory),
  Layer.provideMerge(SecretBox.layer),
  Layer.provideMerge(Invalidation.layerMemory),
  Layer.provideMerge(Layer.sync(MasterKey, () => MasterKey.fromBytes(randomBytes(32))))
)
