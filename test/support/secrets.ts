import { Layer } from "effect"
import { randomBytes } from "node:crypto"
import { MasterKey } from "../../src/secrets/MasterKey.ts"
import { SecretBox } from "../../src/secrets/SecretBox.ts"

/** A SecretBox under a fresh random master key (and the key, for tests that need it). */
export const SecretBoxTest = SecretBox.layer.pipe(
  Layer.provideMerge(Layer.sync(MasterKey, () => MasterKey.fromBytes(randomBytes(32))))
)
