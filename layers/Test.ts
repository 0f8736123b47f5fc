import { randomBytes } from "node:crypto"
import { Layer } from "effect"
import { Organizations } from "../src/orgs/Organizations.ts"
import { MasterKey } from "../src/secrets/MasterKey.ts"
import { SecretBox } from "../src/secrets/SecretBox.ts"

/** Unit tests: every domain in memory, secrets under a throwaway master key. */
export const Test = Layer.mergeAll(Organizations.layerMemory).pipe(
  Layer.provideMerge(SecretBox.layer),
  Layer.provideMerge(Layer.sync(MasterKey, () => MasterKey.fromBytes(randomBytes(32))))
)
