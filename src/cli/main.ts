import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Layer, Logger, References } from "effect"
import { Command } from "effect/cli"
import { Main } from "../../layers/Main.ts"
import { AdminClient } from "../admin/AdminClient.ts"
import { LogLevel } from "../config/AppConfig.ts"
import { apiCommands, usageCommand } from "../api/ApiCommands.ts"
import { IngestClient, ingestCommand } from "../ingest/IngestCommand.ts"
import { GatewayAdminClient } from "../gateway/GatewayAdminRpcs.ts"
import { gatewayCommand } from "../gateway/GatewayCommands.ts"
import { dbCommand } from "./DbCommand.ts"
import { orgCommand } from "./OrgCommands.ts"
import { serveCommand } from "./ServeCommand.ts"

/** Administrative commands reach the data through the running server's admin socket, or in-process. */
const viaAdminSocket = AdminClient.layer(Main)
// Domain commands name the client of their own RPC group; the merged admin client serves them all.
const GatewayAdminClientLive = Layer.effect(GatewayAdminClient, AdminClient).pipe(Layer.provide(viaAdminSocket))
const IngestClientLive = Layer.effect(IngestClient, AdminClient).pipe(Layer.provide(viaAdminSocket))

const vdb = Command.make("vdb").pipe(
  Command.withDescription("vdb: vulnerability intelligence and AI firewall"),
  Command.withSubcommands([
    serveCommand,
    dbCommand,
    orgCommand.pipe(Command.provide(viaAdminSocket)),
    gatewayCommand.pipe(Command.provide(GatewayAdminClientLive)),
    ingestCommand.pipe(Command.provide(IngestClientLive)),
    usageCommand.pipe(Command.provide(viaAdminSocket)),
    ...apiCommands
  ])
)

/** Logs are JSON lines on stderr, so stdout carries only a command's output. */
const Logging = Layer.unwrap(Effect.map(LogLevel, (level) =>
  Layer.mergeAll(
    Logger.layer([Logger.withConsoleError(Logger.formatJson)]),
    Layer.succeed(References.MinimumLogLevel, level)
  ))).pipe(Layer.orDie)

/** One clear line on stderr and a non-zero exit; never a stack trace for an expected failure. */
const reportFailure = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    if (Cause.hasInterruptsOnly(cause)) return
    const error = Cause.squash(cause)
    const message = error instanceof Error || (typeof error === "object" && error !== null && "message" in error)
      ? String((error as { message: unknown }).message)
      : String(error)
    if (!isCliParseError(error)) yield* Console.error(`vdb: ${message}`)
    yield* Effect.sync(() => {
      process.exitCode = 1
    })
  })

const isCliParseError = (error: unknown) =>
  typeof error === "object" && error !== null && "_tag" in error &&
  ["MissingOption", "MissingArgument", "InvalidValue", "UnknownSubcommand", "UnrecognizedOption", "ShowHelp"]
    .includes(String((error as { _tag: unknown })._tag))

Command.run(vdb, { version: "0.1.0" }).pipe(
  Effect.catchCause(reportFailure),
  Effect.provide(Layer.mergeAll(NodeServices.layer, Logging)),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // SIGTERM/SIGINT interrupt the main fiber; once finalizers have drained
    // requests and closed the database, that is a clean exit, not a failure.
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? (process.exitCode as number | undefined) ?? 0 : 1)
  })
)
