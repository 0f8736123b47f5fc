import { Effect, Layer, Option } from "effect"
import { DatabaseUrl } from "../src/config/AppConfig.ts"
import { Embedded } from "./Embedded.ts"
import { Live } from "./Live.ts"

/** `DATABASE_URL` set: Live; unset: Embedded. Behaviour never depends on which. */
export const Main = Layer.unwrap(Effect.map(DatabaseUrl, (url) => Option.isSome(url) ? Live : Embedded))
