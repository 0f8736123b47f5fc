import { Effect, Option, Schema, Stdio, Stream } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { AdminClient } from "../admin/AdminClient.ts"
import type { Member } from "../members/Member.ts"
import { MemberError } from "../members/MemberError.ts"
import { readHidden } from "./HiddenInput.ts"
import { printFields, printJson, printTable } from "./Output.ts"
import { refusalsAs } from "./Refusals.ts"

/** A refused `bin/vdb member ...` command; `message` is the one line the CLI root prints. */
export class MemberCommandError extends Schema.TaggedError<MemberCommandError>()("MemberCommandError", {
  message: Schema.String
}) {}

const fail = (message: string) => Effect.fail(new MemberCommandError({ message }))

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON"), Flag.withDefault(false))

const MAX_STDIN_BYTES = 4096

/** At a terminal: typed with the echo off, Enter ends it. */
const typedPassword = Effect.gen(function*() {
  const typed = yield* readHidden("Password (not shown), then Enter:", "enter", MAX_STDIN_BYTES)
  if (typed._tag === "Cancelled") return yield* fail("cancelled: no password was read")
  if (typed._tag === "TooLong") return yield* fail(`the password is larger than ${MAX_STDIN_BYTES} bytes`)
  if (typed.text.length === 0) return yield* fail("no password typed")
  return typed.text
})

/** The password comes from stdin (never argv, which other users can see); only the line ending is removed. */
const readPassword = Effect.gen(function*() {
  const stdio = yield* Stdio.Stdio
  if (yield* stdio.stdinIsTerminal) return yield* typedPassword
  const chunks = yield* stdio.stdin.pipe(
    Stream.runCollect,
    Effect.mapError(() => new MemberCommandError({ message: "could not read the password from stdin" }))
  )
  const buffer = Buffer.concat([...chunks])
  if (buffer.length > MAX_STDIN_BYTES) {
    return yield* fail(`the password on stdin is larger than ${MAX_STDIN_BYTES} bytes`)
  }
  const password = buffer.toString("utf8").replace(/\r?\n$/, "")
  if (password.length === 0) {
    return yield* fail("no password on stdin (pipe it in: ... member create ... < passwordfile)")
  }
  return password
})

/** Server refusals (unknown organization, taken email, ...) become the command's one line. */
const refusal = refusalsAs(MemberError, fail)

const printMember = (m: Member, asJson: boolean) =>
  asJson
    ? printJson({ uuid: m.uuid, email: m.email, org: m.orgUuid })
    : printFields([["uuid", m.uuid], ["email", m.email], ["org", m.orgUuid], ["created", m.createdAt]])

const create = Command.make(
  "create",
  {
    org: Flag.String("org").pipe(Flag.withDescription("Organization UUID")),
    email: Flag.String("email").pipe(Flag.withDescription("The member's email (their sign-in name)")),
    json
  },
  Effect.fn(function*(input) {
    const password = yield* readPassword
    const admin = yield* AdminClient
    const member = yield* refusal(admin.MemberCreate({ org: input.org, email: input.email, password }))
    yield* printMember(member, input.json)
  })
).pipe(Command.withDescription("Create a member of an organization; the password is read from stdin"))

const list = Command.make(
  "list",
  { org: Flag.String("org").pipe(Flag.withDescription("Only this organization's members"), Flag.optional), json },
  Effect.fn(function*(input) {
    const admin = yield* AdminClient
    const members = yield* admin.MemberList({ org: Option.getOrUndefined(input.org) })
    if (input.json) {
      return yield* printJson(
        members.map((m) => ({ uuid: m.uuid, email: m.email, org: m.orgUuid, createdAt: m.createdAt }))
      )
    }
    yield* printTable(
      ["UUID", "EMAIL", "ORG", "CREATED"],
      members.map((m) => [m.uuid, m.email, m.orgUuid, m.createdAt])
    )
  })
).pipe(Command.withDescription("List members"))

const remove = Command.make(
  "remove",
  { uuid: Argument.String("uuid").pipe(Argument.withDescription("Member UUID")), json },
  Effect.fn(function*(input) {
    const admin = yield* AdminClient
    const member = yield* refusal(admin.MemberRemove({ uuid: input.uuid }))
    yield* printMember(member, input.json)
  })
).pipe(Command.withDescription("Remove a member; their sessions end at once"))

export const memberCommand = Command.make("member").pipe(
  Command.withDescription("Manage the members who sign in to the site and approve device sign-ins"),
  Command.withSubcommands([create, list, remove])
)
