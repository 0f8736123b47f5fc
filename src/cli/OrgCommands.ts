import { Console, DateTime, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type Organization, type OrgCredentials, orgNameProblem } from "../../schema/Organization.ts"
import { AdminClient } from "../admin/AdminClient.ts"
import { wholeNumberFlag } from "./NumberFlags.ts"
import { printFields, printJson, printTable } from "./Output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print machine-readable JSON"), Flag.withDefault(false))
const uuid = Argument.String("uuid").pipe(Argument.withDescription("Organization UUID"))
/**
 * Limits and names are checked as the command line is parsed, so a refused value is refused before
 * anything runs: without a server, the command opens the data directory itself, and a bad value
 * used to create it (and a master key) first. The RPC schema refuses a negative limit too, but with
 * a schema path instead of the flag's name.
 */
const limitFlag = (name: string, description: string) =>
  wholeNumberFlag(name, description, { min: 0, max: 2_147_483_647, note: "0 = unlimited" }).pipe(Flag.optional)
const perMinute = limitFlag("per-minute", "Requests per minute (default 5)")
const perWeek = limitFlag("per-week", "Requests per ISO week (default 1000)")
const nameFlag = Flag.String("name").pipe(
  Flag.withDescription("Organization name: printable text, 1 to 200 characters"),
  Flag.filterMap(
    (raw) => orgNameProblem(raw) === undefined ? Option.some(raw.trim()) : Option.none(),
    (raw) => `--name: ${orgNameProblem(raw)}`
  )
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

const create = Command.make(
  "create",
  { name: nameFlag, perMinute, perWeek, json },
  Effect.fn(function*(input) {
    const admin = yield* AdminClient
    const created = yield* admin.OrgCreate({
      name: input.name,
      perMinute: Option.getOrUndefined(input.perMinute),
      perWeek: Option.getOrUndefined(input.perWeek)
    })
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
    const perMinute = Option.getOrUndefined(input.perMinute)
    const perWeek = Option.getOrUndefined(input.perWeek)
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
