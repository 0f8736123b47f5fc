import { Context, Redacted } from "effect"
import { createHash } from "node:crypto"

export interface KeyMaterial {
  /** Short fingerprint stored beside every ciphertext so the key can rotate. */
  readonly id: string
  readonly key: Redacted.Redacted<Uint8Array>
}

/**
 * The master key that encrypts every stored secret, plus retired keys still
 * accepted for decryption while data is re-sealed under the current one.
 */
export class MasterKey extends Context.Service<MasterKey, {
  readonly current: KeyMaterial
  readonly retired: ReadonlyArray<KeyMaterial>
}>()("vdb/secrets/MasterKey") {
  static readonly fromBytes = (current: Uint8Array, retired: ReadonlyArray<Uint8Array> = []) =>
    MasterKey.of({ current: keyMaterial(current), retired: retired.map(keyMaterial) })
}

export const keyMaterial = (key: Uint8Array): KeyMaterial => ({
  id: createHash("sha256").update(key).digest("hex").slice(0, 12),
  key: Redacted.make(key)
})

export const MASTER_KEY_BYTES = 32
