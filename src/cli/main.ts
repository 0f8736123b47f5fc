import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Console, Effect, Exit, Layer, Logger, References } from "effect"
import { type CliError, CliOutput, Command } from "effect/cli"
import { AdminClient } from "../admin/AdminClient.ts"
import { LogLevel } from "../config/AppConfig.ts"
import { bugStack, describeCause, kindsOf } from "./FailureMessage.ts"

/**
 * The in-process database behind administrative commands when no server runs;
 * loaded only then (a CLI talking to a running server never loads it).
 */
const Main = Layer.unwrap(Effect.promise(() => import("../../layers/Main.ts")).pipe(Effect.map((m) => m.Main)))

/** Administrative commands reach the data through the running server's admin socket, or in-process. */
const viaAdminSocket = AdminClient.layer(Main)

/** Any command fits whose requirements `main` provides; its name, input and errors are its own. */
type TopCommand = Command.Command<any, any, any, unknown, NodeServices.NodeServices>

/**
 * Every top-level command, by name, in the order help lists them. Start-up is
 * mostly module loading (each command's module pulls its domain), so `vdb
 * NAME …` loads NAME's module alone; `vdb`, `vdb --help`, a global flag first
 * or an unknown name load them all, so help and "unknown subcommand" are the same.
 */
const COMMANDS: ReadonlyArray<readonly [ReadonlyArray<string>, () => Promise<ReadonlyArray<TopCommand>>]> = [
  [["serve"], () => import("./ServeCommand.ts").then((m) => [m.serveCommand])],
  [["db"], () => import("./DbCommand.ts").then((m) => [m.dbCommand])],
  [["org"], () => import("./OrgCommands.ts").then((m) => [m.orgCommand.pipe(Command.provide(viaAdminSocket))])],
  [
    ["member"],
    () => import("./MemberCommands.ts").then((m) => [m.memberCommand.pipe(Command.provide(viaAdminSocket))])
  ],
  [["auth"], () => import("./AuthCommands.ts").then((m) => [m.authCommand])],
  [["gateway"], async () => {
    const [{ gatewayCommand }, gateway, firewall, custom] = await Promise.all([
      import("./GatewayCommands.ts"),
      import("../admin/GatewayAdminRpcs.ts"),
      import("../admin/FirewallAdminRpcs.ts"),
      import("../admin/CustomProviderAdminRpcs.ts")
    ])
    // Domain commands name the client of their own RPC group; the merged admin client serves them all.
    const clients = Layer.mergeAll(
      Layer.effect(gateway.GatewayAdminClient, AdminClient),
      Layer.effect(firewall.FirewallAdminClient, AdminClient),
      Layer.effect(custom.CustomProviderAdminClient, AdminClient)
    )
    return [gatewayCommand.pipe(Command.provide(clients.pipe(Layer.provide(viaAdminSocket))))]
  }],
  [["ingest"], () =>
    import("./IngestCommand.ts").then((m) => [
      m.ingestCommand.pipe(
        Command.provide(Layer.effect(m.IngestClient, AdminClient).pipe(Layer.provide(viaAdminSocket)))
      )
    ])],
  [["sync"], () =>
    import("./SyncCommands.ts").then((m) => [
      m.syncCommand.pipe(Command.provide(Layer.effect(m.FeedClient, AdminClient).pipe(Layer.provide(viaAdminSocket))))
    ])],
  [["usage"], () => import("./ApiCommands.ts").then((m) => [m.usageCommand.pipe(Command.provide(viaAdminSocket))])],
  [["mcp"], () => import("./McpCommands.ts").then((m) => [m.mcpCommand])],
  [["versions"], () => import("./VersionsCommands.ts").then((m) => [m.versionsCommand])],
  [["query"], () => import("./QueryCommand.ts").then((m) => [m.queryCommand])],
  [["info", "vuln", "exploits"], () => import("./ApiCommands.ts").then((m) => [...m.apiCommands])]
]

const commandsFor = (args: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const named = COMMANDS.filter(([names]) => args[0] !== undefined && names.includes(args[0]))
    const parts = await Promise.all((named.length > 0 ? named : COMMANDS).map(([, load]) => load()))
    return parts.flat()
  })

const vdb = (commands: ReadonlyArray<TopCommand>) =>
  Command.make("vdb").pipe(
    Command.withDescription("vdb: vulnerability intelligence and AI firewall"),
    Command.withSubcommands(commands)
  )

/** A value short and printable enough to quote back in one line; anything else is not shown. */
const QUOTABLE = /^[\x20-\x7e]{1,64}$/

/**
 * What a refused value is, without echoing a value that would break the line (a newline) or
 * flood it: the library quotes any value whole. A check of our own words its expectation as
 * `--flag: …` (`Flag.filterMap`), and is shown as it is.
 */
const invalidValueLine = (error: CliError.InvalidValue) => {
  const name = error.kind === "flag" ? `--${error.option}` : `<${error.option}>`
  if (error.expected.startsWith(`${name}`)) return error.expected
  const expected = error.expected.replace(/^Expected:? /, "")
  if (error.value.length === 0) return `${name}: missing value; expected ${expected}`
  return `${name}: invalid value${QUOTABLE.test(error.value) ? ` "${error.value}"` : ""}; expected ${expected}`
}

/**
 * A command line that does not parse (a missing flag, `--per-minute abc`) is one line on stderr
 * naming what is wrong and where the help is, like every other refusal; the library's default
 * printed the whole help on stdout before the error. `--help` itself prints the help as before.
 */
const OneLineErrors = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Console.error(
        `vdb: ${
          event.errors.map((error) => error._tag === "InvalidValue" ? invalidValueLine(error) : error.message).join(
            "; "
          )
        } (see: ${event.commandPath.join(" ")} --help)`
      )
      : CliOutput.defaultPresenter.present(event)
})

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
      yield* Effect.logDebug("command failed").pipe(
        Effect.annotateLogs({ kinds: kindsOf(error), stack: bugStack(error) })
      )
      yield* Console.error(`vdb: ${describeCause(cause)}`)
    }
    yield* Effect.sync(() => {
      process.exitCode = 1
    })
  })

/** What an interrupted command says; its exit status is 130 (128 + SIGINT), as shells report it. */
const INTERRUPTED: Readonly<Record<string, string>> = {
  ingest: "vdb: interrupted: the items already stored are kept; run the same command again to resume\n"
}

const isCliParseError = (error: unknown) =>
  typeof error === "object" && error !== null && "_tag" in error &&
  ["MissingOption", "MissingArgument", "InvalidValue", "UnknownSubcommand", "UnrecognizedOption", "ShowHelp"]
    .includes(String((error as { _tag: unknown })._tag))

commandsFor(process.argv.slice(2)).pipe(
  Effect.flatMap((commands) => Command.run(vdb(commands), { version: "0.1.0" })),
  Effect.catchCause(reportFailure),
  Effect.provide(Layer.mergeAll(NodeServices.layer, Logging, OneLineErrors)),
  // The logging configuration itself (VDB_LOG_LEVEL) can be wrong: reported with the default logger.
  Effect.catchCause(reportFailure),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    teardown: (exit, onExit) => {
      if (Exit.isSuccess(exit)) return onExit((process.exitCode as number | undefined) ?? 0)
      if (!Cause.hasInterruptsOnly(exit.cause)) return onExit(1)
      // SIGTERM/SIGINT interrupt the main fiber. For `serve`, once finalizers have drained requests and
      // closed the database, that is a clean exit. Any other command did not finish: exiting 0 made
      // `vdb ingest … && next` go on after a partial run.
      if (process.argv[2] === "serve") return onExit((process.exitCode as number | undefined) ?? 0)
      process.stderr.write(INTERRUPTED[process.argv[2] ?? ""] ?? "vdb: interrupted\n")
      onExit(130)
    }
  })
)
