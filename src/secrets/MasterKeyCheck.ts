import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { MasterKeyError } from "./MasterKeyLoader.ts"
import { SecretBox } from "./SecretBox.ts"

const CANARY = "vdb master key check"

/**
 * Start-up proof that the configured master key is the one the database's
 * secrets were sealed with: the first start seals a canary, every later start
 * must open it. A wrong key fails loudly instead of producing unreadable secrets.
 */
export const MasterKeyCheck = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox
    const rows = yield* sql<
      { key_id: string; canary: string }
    >`SELECT key_id, canary FROM master_key_check WHERE id = 1`
    if (rows.length === 0) {
      const canary = yield* box.seal(CANARY)
      yield* sql`INSERT INTO master_key_check (id, key_id, canary) VALUES (1, ${box.keyId}, ${canary})
      ON CONFLICT (id) DO NOTHING`
      return
    }
    const opened = yield* box.open(rows[0]!.canary).pipe(Effect.option)
    if (opened._tag === "None" || opened.value !== CANARY) {
      return yield* new MasterKeyError({
        message: `the master key (id ${box.keyId}) is not the key this database was sealed with ` +
          `(id ${
            rows[0]!.key_id
          }); set VDB_MASTER_KEY to that key, or list it in VDB_MASTER_KEYS_RETIRED while rotating`
      })
    }
    if (rows[0]!.key_id !== box.keyId) {
      yield* sql`UPDATE master_key_check SET key_id = ${box.keyId}, canary = ${yield* box.seal(CANARY)} WHERE id = 1`
    }
  }).pipe(
    Effect.catchTag("SqlError", (e) => Effect.fail(new MasterKeyError({ message: `master key check: ${e.message}` })))
  )
)
