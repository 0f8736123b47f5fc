import { Console, Effect } from "effect"
import { Command } from "effect/cli"
import { Main } from "../../layers/Main.ts"
import { AdminClient } from "../admin/AdminClient.ts"

/** Migrations run at every start; this applies them without serving (and checks the master key). */
const migrate = Command.make(
  "migrate",
  {},
  () =>
    Effect.gen(function*() {
      yield* AdminClient
      yield* Console.log("database is migrated")
    }).pipe(Effect.provide(AdminClient.layer(Main)))
).pipe(Command.withDescription("Apply pending database migrations"))

export const dbCommand = Command.make("db").pipe(
  Command.withDescription("Database maintenance"),
  Command.withSubcommands([migrate])
)
