import { Effect, Layer } from "effect"
import { DataDir } from "../src/config/AppConfig.ts"
import { layerPglite, pgliteDir } from "../src/db/Database.ts"
import { appOver } from "./App.ts"

/** The no-configuration default: PGlite in `$VDB_DATA_DIR/pglite`, one process, one session. */
export const Embedded = appOver(Layer.unwrap(Effect.map(DataDir, (dir) => layerPglite(pgliteDir(dir)))))
