import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Layer, Logger, References } from "effect"
import { Command } from "effect/cli"
import { Main } from "../../layers/Main.ts"
import { AdminClient } from "../admin/AdminClient.ts"
import { LogLevel } from "../config/AppConfig.ts"
import { apiCommands, usageCommand } from "./ApiCommands.ts"
import { IngestClient, ingestCommand } from "../ingest/IngestCommand.ts"
import { GatewayAdminClient } from "../gateway/GatewayAdminRpcs.ts"
import { FirewallAdminClient } from "../gateway/FirewallAdminRpcs.ts"
import { CustomProviderAdminClient } from "../gateway/custom/CustomProviderAdminRpcs.ts"
import { gatewayCommand } from "./GatewayCommands.ts"
import { dbCommand } from "./DbCommand.ts"
import { orgCommand } from "./OrgCommands.ts"
import { authCommand } from "./AuthCommands.ts"
import { memberCommand } from "./MemberCommands.ts"
import { bugStack, describeCause, kindsOf } from "./FailureMessage.ts"
import { serveCommand } from "./ServeCommand.ts"
import { mcpCommand } from "./McpCommands.ts"

/** Administrative commands reach the data through the running server's admin socket, or in-process. */
const viaAdminSocket = AdminClient.layer(Main)
// Domain commands name the client of their own RPC group; the merged admin client serves them all.
const GatewayAdminClientLive = Layer.effect(GatewayAdminClient, AdminClient).pipe(Layer.provide(viaAdminSocket))
const IngestClientLive = Layer.effect(IngestClient, AdminClient).pipe(Layer.provide(viaAdminSocket))
const FirewallAdminClientLive = Layer.effect(FirewallAdminClient, AdminClient).pipe(Layer.provide(viaAdminSocket))
const CustomProviderAdminClientLive = Layer.effect(CustomProviderAdminClient, AdminClient).pipe(Layer.provide(viaAdminSocket))

const vdb = Command.make("vdb").pipe(
  Command.withDescription("vdb: vulnerability intelligence and AI firewall"),
  Command.withSubcommands([
    serveCommand,
    dbCommand,
    orgCommand.pipe(Command.provide(viaAdminSocket)),
    memberCommand.pipe(Command.provide(viaAdminSocket)),
    authCommand,
    gatewayCommand.pipe(
      Command.provide(Layer.mergeAll(GatewayAdminClientLive, FirewallAdminClientLive, CustomProviderAdminClientLive))
    ),
    ingestCommand.pipe(Command.provide(IngestClientLive)),
    usageCommand.pipe(Command.provide(viaAdminSocket)),
    mcpCommand,
    ...apiCommands
  ])
)

/** Logs are JSON lines on stderr, so stdout carries only a command's output. */
const Logging = Layer.unwrap(Effect.map(LogLevel, (level) =>
  Layer.mergeAll(
    Logger.layer([Logger.withConsoleError(Logger.formatJson)]),
    Layer.succeed(References.MinimumLogLevel, level)
  )))

/**
 * One clear line on stderr and a non-zero exit; never a stack trace or a
 * library's internal names for an expected failure (see FailureMessage.ts).
 * At debug level the error kinds (tags, system and SQLSTATE codes) are logged
 * too: they say what failed without any message text, which may echo input.
 */
const reportFailure = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    if (Cause.hasInterruptsOnly(cause)) return
    const error = Cause.squash(cause)
    if (!isCliParseError(error)) {
      yield* Effect.logDebug("command failed").pipe(Effect.annotateLogs({ kinds: kindsOf(error), stack: bugStack(error) }))
      yield* Console.error(`vdb: ${describeCause(cause)}`)
    }
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
  // The logging configuration itself (VDB_LOG_LEVEL) can be wrong: reported with the default logger.
  Effect.catchCause(reportFailure),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // SIGTERM/SIGINT interrupt the main fiber; once finalizers have drained
    // requests and closed the database, that is a clean exit, not a failure.
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? (process.exitCode as number | undefined) ?? 0 : 1)
  })
)
