import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Test } from "../../layers/Test.ts"
import { SecretBox } from "../../src/secrets/SecretBox.ts"

/** Replaces the tag (last field) of a sealed value. */
const withTag = (sealed: string, tag: (bytes: Buffer) => Buffer) => {
  const parts = sealed.split(".")
  parts[4] = tag(Buffer.from(parts[4]!, "base64url")).toString("base64url")
  return parts.join(".")
}

describe("SecretBox", () => {
  layer(Test)((it) => {
    it.effect("opens what it sealed", () =>
      Effect.gen(function*() {
        const box = yield* SecretBox
        assert.strictEqual(yield* box.open(yield* box.seal("a secret")), "a secret")
      }))

    // Node accepts a GCM tag as short as 4 bytes unless the decipher is told the
    // length; a 32-bit tag can be forged by trying about 2^32 values.
    it.effect("refuses a truncated or lengthened authentication tag", () =>
      Effect.gen(function*() {
        const box = yield* SecretBox
        const sealed = yield* box.seal("a secret")
        for (const length of [4, 8, 12, 15]) {
          const error = yield* Effect.flip(box.open(withTag(sealed, (tag) => tag.subarray(0, length))))
          assert.strictEqual(error.reason, "tampered", `tag of ${length} bytes`)
        }
        const longer = yield* Effect.flip(box.open(withTag(sealed, (tag) => Buffer.concat([tag, Buffer.from([0])]))))
        assert.strictEqual(longer.reason, "tampered")
      }))

    it.effect("refuses a flipped tag bit", () =>
      Effect.gen(function*() {
        const box = yield* SecretBox
        const sealed = yield* box.seal("a secret")
        const flipped = withTag(sealed, (tag) => Buffer.from(tag.map((b, i) => (i === 0 ? b ^ 1 : b))))
        assert.strictEqual((yield* Effect.flip(box.open(flipped))).reason, "tampered")
      }))
  })
})
