import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto"
import { type KeyMaterial, MasterKey } from "./MasterKey.ts"

export class SecretBoxError extends Schema.TaggedError<SecretBoxError>()("SecretBoxError", {
  reason: Schema.Literals(["malformed", "unknown-key", "tampered"]),
  keyId: Schema.optional(Schema.String)
}) {
  override get message() {
    switch (this.reason) {
      case "malformed":
        return "stored secret is not in the sealed format"
      case "unknown-key":
        return `stored secret was sealed with master key ${this.keyId}, which is not configured`
      case "tampered":
        return "stored secret failed authentication (wrong master key or corrupted data)"
    }
  }
}

/** GCM's full 128-bit tag; nothing shorter is ever accepted. */
const TAG_BYTES = 16

/**
 * AES-256-GCM sealing of stored secrets under the master key.
 * Format: `v1.<keyId>.<nonce b64url>.<ciphertext b64url>.<tag b64url>`.
 */
export class SecretBox extends Context.Service<SecretBox, {
  readonly keyId: string
  seal(plaintext: string): Effect.Effect<string>
  open(sealed: string): Effect.Effect<string, SecretBoxError>
  /** A key for one purpose (e.g. JWT signing), derived with HKDF so the master key itself never signs anything. */
  derive(purpose: string, bytes?: number): Redacted.Redacted<Uint8Array>
}>()("vdb/secrets/SecretBox") {
  static readonly layer = Layer.effect(
    SecretBox,
    Effect.gen(function*() {
      const master = yield* MasterKey
      const byId = new Map<string, KeyMaterial>([master.current, ...master.retired].map((k) => [k.id, k]))
      const currentKey = Redacted.value(master.current.key)

      const seal = (plaintext: string) =>
        Effect.sync(() => {
          const nonce = randomBytes(12)
          const cipher = createCipheriv("aes-256-gcm", currentKey, nonce)
          const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
          return [
            "v1",
            master.current.id,
            nonce.toString("base64url"),
            ciphertext.toString("base64url"),
            cipher.getAuthTag().toString("base64url")
          ].join(".")
        })

      const open = (sealed: string) =>
        Effect.suspend(() => {
          const parts = sealed.split(".")
          if (parts.length !== 5 || parts[0] !== "v1") {
            return Effect.fail(new SecretBoxError({ reason: "malformed" }))
          }
          const [, keyId, nonce, ciphertext, tag] = parts as [string, string, string, string, string]
          const key = byId.get(keyId)
          if (key === undefined) return Effect.fail(new SecretBoxError({ reason: "unknown-key", keyId }))
          const tagBytes = Buffer.from(tag, "base64url")
          // Node accepts a truncated tag unless told its length, and a 4-byte tag is forgeable by brute force.
          if (tagBytes.length !== TAG_BYTES) return Effect.fail(new SecretBoxError({ reason: "tampered", keyId }))
          try {
            const decipher = createDecipheriv("aes-256-gcm", Redacted.value(key.key), Buffer.from(nonce, "base64url"), {
              authTagLength: TAG_BYTES
            })
            decipher.setAuthTag(tagBytes)
            const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()])
            return Effect.succeed(plain.toString("utf8"))
          } catch {
            return Effect.fail(new SecretBoxError({ reason: "tampered", keyId }))
          }
        })

      const derive = (purpose: string, bytes = 64) =>
        Redacted.make(new Uint8Array(hkdfSync("sha256", currentKey, "vdb", purpose, bytes)))

      return SecretBox.of({ keyId: master.current.id, seal, open, derive })
    })
  )
}
