import { Console, DateTime, Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type Organization, type OrgCredentials, orgNameProblem } from "../../schema/Organization.ts"
import { AdminClient } from "../admin/AdminClient.ts"
import { printFields, printJson, printTable } from "./Output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print machine-readable JSON"), Flag.withDefault(false))
const uuid = Argument.String("uuid").pipe(Argument.withDescription("Organization UUID"))
const perMinute = Flag.Int("per-minute").pipe(
  Flag.withDescription("Requests per minute (0 = unlimited; default 5)"),
  Flag.optional
)
const perWeek = Flag.Int("per-week").pipe(
  Flag.withDescription("Requests per ISO week (0 = unlimited; default 1000)"),
  Flag.optional
)

const limitText = (n: number) => n === 0 ? "unlimited" : String(n)

const printOrg = (org: Organization, asJson: boolean) =>
  asJson
    ? printJson({
      uuid: org.uuid,
      name: org.name,
      isActive: org.isActive,
      perMinute: org.perMinute,
      perWeek: org.perWeek,
      createdAt: DateTime.formatIso(org.createdAt),
      updatedAt: DateTime.formatIso(org.updatedAt)
    })
    : printFields([
      ["uuid", org.uuid],
      ["name", org.name],
      ["active", org.isActive ? "yes" : "no"],
      ["per minute", limitText(org.perMinute)],
      ["per week", limitText(org.perWeek)],
      ["created", DateTime.formatIso(org.createdAt)],
      ["updated", DateTime.formatIso(org.updatedAt)]
    ])

const printCredentials = (c: OrgCredentials, asJson: boolean) =>
  asJson
    ? printJson({ uuid: c.uuid, name: c.name, secret: c.secret, apiKey: c.apiKey })
    : Effect.andThen(
      printFields([["uuid", c.uuid], ["name", c.name], ["secret", c.secret], ["apiKey", c.apiKey]]),
      Console.error("The secret is shown only now; store it safely. Send the apiKey as the Authorization header.")
    )

/** Input refused before it reaches the server; `message` is the one line the CLI root prints. */
export class OrgCommandError extends Schema.TaggedError<OrgCommandError>()("OrgCommandError", {
  message: Schema.String
}) {}

const fail = (message: string) => Effect.fail(new OrgCommandError({ message }))

/** The RPC schema refuses a negative limit too, but with a schema path instead of the flag's name. */
const validLimit = (flag: string, o: Option.Option<number>) =>
  Option.match(o, {
    onNone: () => Effect.succeed(undefined),
    onSome: (n) =>
      Number.isSafeInteger(n) && n >= 0 && n <= 2_147_483_647
        ? Effect.succeed(n)
        : fail(`--${flag} must be a whole number >= 0 (0 = unlimited), got ${n}`)
  })

const validName = (raw: string) => {
  const problem = orgNameProblem(raw)
  return problem === undefined ? Effect.succeed(raw.trim()) : fail(`--name: ${problem}`)
}

const create = Command.make(
  "create",
  { name: Flag.String("name").pipe(Flag.withDescription("Organization name: printable text, 1 to 200 characters")), perMinute, perWeek, json },
  Effect.fn(function*(input) {
    const name = yield* validName(input.name)
    const perMinute = yield* validLimit("per-minute", input.perMinute)
    const perWeek = yield* validLimit("per-week", input.perWeek)
    const admin = yield* AdminClient
    const created = yield* admin.OrgCreate({ name, perMinute, perWeek })
    yield* printCredentials(created, input.json)
  })
).pipe(Command.withDescription("Create an organization; prints its UUID, secret (once) and API key"))

const list = Command.make(
  "list",
  { json },
  Effect.fn(function*(input) {
    const admin = yield* AdminClient
    const orgs = yield* admin.OrgList()
    if (input.json) {
      return yield* printJson(orgs.map((o) => ({
        uuid: o.uuid,
        name: o.name,
        isActive: o.isActive,
        perMinute: o.perMinute,
        perWeek: o.perWeek,
        createdAt: DateTime.formatIso(o.createdAt)
      })))
    }
    yield* printTable(
      ["UUID", "NAME", "ACTIVE", "PER MINUTE", "PER WEEK"],
      orgs.map((o) => [o.uuid, o.name, o.isActive ? "yes" : "no", limitText(o.perMinute), limitText(o.perWeek)])
    )
  })
).pipe(Command.withDescription("List organizations"))

const show = Command.make(
  "show",
  { uuid, json },
  Effect.fn(function*(input) {
    const admin = yield* AdminClient
    yield* printOrg(yield* admin.OrgShow({ uuid: input.uuid }), input.json)
  })
).pipe(Command.withDescription("Show one organization"))

const rotateSecret = Command.make(
  "rotate-secret",
  { uuid, json },
  Effect.fn(function*(input) {
    const admin = yield* AdminClient
    yield* printCredentials(yield* admin.OrgRotateSecret({ uuid: input.uuid }), input.json)
  })
).pipe(Command.withDescription("Replace the secret; the old API key stops working at once"))

const setActive = (name: string, active: boolean, description: string) =>
  Command.make(
    name,
    { uuid, json },
    Effect.fn(function*(input) {
      const admin = yield* AdminClient
      yield* printOrg(yield* admin.OrgSetActive({ uuid: input.uuid, active }), input.json)
    })
  ).pipe(Command.withDescription(description))

const limits = Command.make(
  "limits",
  { uuid, perMinute, perWeek, json },
  Effect.fn(function*(input) {
    const perMinute = yield* validLimit("per-minute", input.perMinute)
    const perWeek = yield* validLimit("per-week", input.perWeek)
    const admin = yield* AdminClient
    const org = yield* admin.OrgSetLimits({ uuid: input.uuid, limits: { perMinute, perWeek } })
    yield* printOrg(org, input.json)
  })
).pipe(Command.withDescription("Show or set the per-minute and per-week request limits (0 = unlimited)"))

export const orgCommand = Command.make("org").pipe(
  Command.withDescription("Manage organizations"),
  Command.withSubcommands([
    create,
    list,
    show,
    rotateSecret,
    setActive("activate", true, "Activate an organization"),
    setActive("deactivate", false, "Deactivate an organization; its credentials are refused at once"),
    limits
  ])
)
