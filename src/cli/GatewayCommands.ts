import { Console, DateTime, Effect, Redacted, Result, Schema, Stdio, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { GatewayAdminClient, GatewayAdminError } from "../admin/GatewayAdminRpcs.ts"
import { SLUG as CUSTOM_SLUG } from "../providers/custom/CustomProviderRules.ts"
import { isProviderSlug, PROVIDER_SLUGS } from "../providers/ProviderSlugs.ts"
import { acceptProviderKey } from "../vault/ProviderKeyValue.ts"
import { customProviderCommand } from "./CustomProviderCommands.ts"
import { readHidden } from "./HiddenInput.ts"
import { printJson, printTable } from "./Output.ts"
import { policyCommand } from "./PolicyCommands.ts"
import { refusalsAs } from "./Refusals.ts"
import { checkCommand, ruleCommand } from "./RuleCommands.ts"

/**
 * A refused `bin/vdb gateway ...` command. `message` is one line for stderr;
 * the CLI root prints it and exits non-zero.
 */
export class GatewayCommandError extends Schema.TaggedError<GatewayCommandError>()("GatewayCommandError", {
  message: Schema.String
}) {}

const fail = (message: string) => Effect.fail(new GatewayCommandError({ message }))

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const org = Flag.String("org").pipe(Flag.withDescription("Organization UUID"))
const provider = Flag.String("provider").pipe(Flag.withDescription(`Provider slug (${PROVIDER_SLUGS.join(", ")})`))
const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON"), Flag.withDefault(false))

const validOrg = (raw: string) =>
  UUID.test(raw.trim()) ? Effect.succeed(raw.trim().toLowerCase()) : fail(`--org: not a UUID: ${JSON.stringify(raw)}`)

/** A built-in slug, or slug-shaped: whether it is one of the organization's custom providers is the server's to say. */
const validProvider = (raw: string) =>
  isProviderSlug(raw) || CUSTOM_SLUG.test(raw)
    ? Effect.succeed(raw)
    : fail(
      `--provider: unknown provider ${JSON.stringify(raw)} (known: ${
        PROVIDER_SLUGS.join(", ")
      }, or a custom provider's slug)`
    )

/** Server refusals (unknown organization, ...) become the command's one-line error; defects stay defects. */
const refusal = refusalsAs(GatewayAdminError, fail)

const MAX_STDIN_BYTES = 64 * 1024

/** At a terminal: pasted with the echo off (a sign-in may span lines), Ctrl-D ends it. */
const pastedKey = Effect.gen(function*() {
  const pasted = yield* readHidden("Paste the provider key (not shown), then press Ctrl-D:", "ctrl-d", MAX_STDIN_BYTES)
  if (pasted._tag === "Cancelled") return yield* fail("cancelled: no provider key was read")
  if (pasted._tag === "TooLong") return yield* fail(`the provider key is larger than ${MAX_STDIN_BYTES} bytes`)
  const key = pasted.text.trim()
  if (key.length === 0) return yield* fail("no provider key pasted")
  return Redacted.make(key)
})

/** The key is read from stdin (never argv, which other users can see in the process list). */
const readKeyFromStdin = Effect.gen(function*() {
  const stdio = yield* Stdio.Stdio
  if (yield* stdio.stdinIsTerminal) return yield* pastedKey
  const bytes = yield* stdio.stdin.pipe(
    Stream.runFold(() => [] as Array<Uint8Array>, (chunks, chunk) => {
      chunks.push(chunk)
      return chunks
    }),
    Effect.mapError(() => new GatewayCommandError({ message: "could not read the provider key from stdin" }))
  )
  const buffer = Buffer.concat(bytes)
  if (buffer.length > MAX_STDIN_BYTES) {
    return yield* fail(`the provider key on stdin is larger than ${MAX_STDIN_BYTES} bytes`)
  }
  const key = buffer.toString("utf8").trim()
  if (key.length === 0) return yield* fail("no provider key on stdin (pipe it in: ... provider-key set ... < keyfile)")
  return Redacted.make(key)
})

const serviceKeyCommand = (name: "create" | "rotate") =>
  Command.make(
    name,
    { org, json },
    Effect.fnUntraced(function*(input) {
      const client = yield* GatewayAdminClient
      const uuid = yield* validOrg(input.org)
      const { key } = yield* (name === "create"
        ? client.GatewayServiceKeyCreate({ org: uuid })
        : client.GatewayServiceKeyRotate({ org: uuid })).pipe(refusal)
      yield* (input.json ? printJson({ key: Redacted.value(key) }) : Console.log(Redacted.value(key)))
      if (!input.json) yield* Console.error("This key is shown only once; store it now.")
    })
  ).pipe(
    Command.withDescription(
      name === "create"
        ? "Issue the organization's gateway service API key"
        : "Replace the organization's gateway service API key (the old one stops working at once)"
    )
  )

const providerKeySet = Command.make(
  "set",
  { org, provider },
  Effect.fnUntraced(function*(input) {
    const client = yield* GatewayAdminClient
    const uuid = yield* validOrg(input.org)
    const slug = yield* validProvider(input.provider)
    // Refused here too, before the key crosses the socket: the server applies the same rules.
    const key = acceptProviderKey(slug, yield* readKeyFromStdin)
    if (Result.isFailure(key)) return yield* fail(key.failure)
    yield* client.GatewayProviderKeySet({ org: uuid, provider: slug, key: key.success }).pipe(refusal)
    yield* Console.log(`stored the ${slug} key for ${uuid}`)
  })
).pipe(Command.withDescription("Store a provider key (read from stdin), replacing any previous one"))

const providerKeyDelete = Command.make(
  "delete",
  { org, provider },
  Effect.fnUntraced(function*(input) {
    const client = yield* GatewayAdminClient
    const uuid = yield* validOrg(input.org)
    const slug = yield* validProvider(input.provider)
    const { deleted } = yield* client.GatewayProviderKeyDelete({ org: uuid, provider: slug }).pipe(refusal)
    yield* Console.log(deleted ? `deleted the ${slug} key for ${uuid}` : `no ${slug} key was stored for ${uuid}`)
  })
).pipe(Command.withDescription("Delete a stored provider key"))

const providerKeyList = Command.make(
  "list",
  { org, json },
  Effect.fnUntraced(function*(input) {
    const client = yield* GatewayAdminClient
    const uuid = yield* validOrg(input.org)
    const entries = yield* client.GatewayProviderKeyList({ org: uuid }).pipe(refusal)
    const rows = entries.map((e) => ({
      provider: e.provider,
      createdAt: DateTime.formatIso(e.createdAt),
      updatedAt: DateTime.formatIso(e.updatedAt)
    }))
    if (input.json) return yield* printJson(rows)
    if (rows.length === 0) return yield* Console.log(`no provider keys stored for ${uuid}`)
    yield* printTable(["PROVIDER", "CREATED", "UPDATED"], rows.map((r) => [r.provider, r.createdAt, r.updatedAt]))
  })
).pipe(Command.withDescription("List stored provider keys (providers and timestamps only)"))

const inferenceLogCommand = (name: "enable" | "disable") =>
  Command.make(
    name,
    { org },
    Effect.fnUntraced(function*(input) {
      const client = yield* GatewayAdminClient
      const uuid = yield* validOrg(input.org)
      yield* client.GatewayInferenceLogSet({ org: uuid, enabled: name === "enable" }).pipe(refusal)
      yield* Console.log(`inference log ${name}d for ${uuid} (gateways pick it up within 30 s)`)
    })
  ).pipe(Command.withDescription(
    name === "enable"
      ? "Record inference metadata (never prompt or completion text) for an organization"
      : "Stop recording inference metadata for an organization"
  ))

/** `bin/vdb gateway ...`: needs `GatewayAdminClient` (and `Stdio` for `provider-key set`). */
export const gatewayCommand = Command.make("gateway").pipe(
  Command.withDescription("AI gateway administration"),
  Command.withSubcommands([
    Command.make("service-key").pipe(
      Command.withDescription("Gateway service API keys"),
      Command.withSubcommands([serviceKeyCommand("create"), serviceKeyCommand("rotate")])
    ),
    Command.make("provider-key").pipe(
      Command.withDescription("Provider keys in the encrypted vault"),
      Command.withSubcommands([providerKeySet, providerKeyDelete, providerKeyList])
    ),
    Command.make("inference-log").pipe(
      Command.withDescription("Per-organization inference logging (metadata only)"),
      Command.withSubcommands([inferenceLogCommand("enable"), inferenceLogCommand("disable")])
    ),
    ruleCommand,
    policyCommand,
    checkCommand,
    customProviderCommand
  ])
)
