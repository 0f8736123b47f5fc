import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { DatabaseUrl, DataDir, MasterKeyB64, RetiredMasterKeysB64 } from "../config/AppConfig.ts"
import { MASTER_KEY_BYTES, MasterKey } from "./MasterKey.ts"

export class MasterKeyError extends Schema.TaggedError<MasterKeyError>()("MasterKeyError", {
  message: Schema.String
}) {}

const decodeKey = (name: string, b64: string) => {
  const bytes = Buffer.from(b64.trim(), "base64")
  return bytes.length === MASTER_KEY_BYTES
    ? Effect.succeed(new Uint8Array(bytes))
    : Effect.fail(
      new MasterKeyError({
        message: `${name} must be ${MASTER_KEY_BYTES} bytes encoded as base64 (got ${bytes.length} bytes); ` +
          `generate one with: openssl rand -base64 32`
      })
    )
}

export const masterKeyPath = (dataDir: string) => resolve(dataDir, "master.key")

/**
 * The embedded default: generated once into `$VDB_DATA_DIR/master.key` (0600).
 * If the key file is gone while the database is still there, generating a new
 * key would silently make every stored secret unreadable, so it refuses.
 */
const embeddedKey = Effect.fnUntraced(function*(dataDir: string) {
  const path = masterKeyPath(dataDir)
  if (existsSync(path)) return yield* decodeKey(path, readFileSync(path, "utf8"))
  const pglite = resolve(dataDir, "pglite")
  if (existsSync(pglite) && readdirSync(pglite).length > 0) {
    return yield* new MasterKeyError({
      message: `${path} is missing but ${pglite} holds data sealed with it; restore the key file ` +
        `(or set VDB_MASTER_KEY to the key) — a new key would make every stored secret unreadable`
    })
  }
  const key = randomBytes(MASTER_KEY_BYTES)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" })
  chmodSync(path, 0o600)
  yield* Effect.logWarning("generated a new master key; back it up, it encrypts every stored secret").pipe(
    Effect.annotateLogs({ path })
  )
  return new Uint8Array(key)
})

/** `VDB_MASTER_KEY`; required with `DATABASE_URL`; generated into the data directory in embedded mode. */
export const MasterKeyFromConfig = Layer.effect(
  MasterKey,
  Effect.gen(function*() {
    const configured = yield* MasterKeyB64
    const retired = yield* RetiredMasterKeysB64
    const retiredKeys = Option.isSome(retired)
      ? yield* Effect.forEach(
        Redacted.value(retired.value).split(",").filter((s) => s.trim() !== ""),
        (b64) => decodeKey("VDB_MASTER_KEYS_RETIRED", b64)
      )
      : []
    if (Option.isSome(configured)) {
      return MasterKey.fromBytes(yield* decodeKey("VDB_MASTER_KEY", Redacted.value(configured.value)), retiredKeys)
    }
    if (Option.isSome(yield* DatabaseUrl)) {
      return yield* new MasterKeyError({
        message: "VDB_MASTER_KEY is required when DATABASE_URL is set (32 bytes, base64: openssl rand -base64 32)"
      })
    }
    return MasterKey.fromBytes(yield* embeddedKey(yield* DataDir), retiredKeys)
  }).pipe(Effect.mapError((e) => e instanceof MasterKeyError ? e : new MasterKeyError({ message: e.message })))
)
