import { Console, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { ApiClient } from "../api/ApiClient.ts"
import { ApiCommandError, withClient } from "./ApiCommands.ts"
import { printJson, printTable } from "./Output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print the response as JSON"), Flag.withDefault(false))
const jwt = Flag.Boolean("jwt").pipe(
  Flag.withDescription("Sign in for a short-lived token instead of the static API key"),
  Flag.withDefault(false)
)
const purl = Flag.String("purl").pipe(Flag.withDescription("A package URL: pkg:pypi/jinja2@2.4.1"), Flag.optional)
const ecosystem = Flag.String("ecosystem").pipe(
  Flag.withDescription("An OSV ecosystem: PyPI, npm, Maven, Go, Debian:12, ..."),
  Flag.optional
)
const name = Flag.String("name").pipe(
  Flag.withDescription("The package name as the ecosystem spells it"),
  Flag.optional
)
const version = Flag.String("version").pipe(
  Flag.withDescription("Only records affecting this version (default: every record of the package)"),
  Flag.optional
)

const TEXT_WIDTH = 70
const clip = (text: string) => (text.length > TEXT_WIDTH ? `${text.slice(0, TEXT_WIDTH - 1)}…` : text)

/** The package of the flags: a purl, or an ecosystem and a name, never both. */
const packageOf = (
  input: { purl: Option.Option<string>; ecosystem: Option.Option<string>; name: Option.Option<string> }
) => {
  if (Option.isSome(input.purl)) {
    return Option.isSome(input.ecosystem) || Option.isSome(input.name)
      ? Effect.fail(new ApiCommandError({ message: "give --purl, or --ecosystem and --name, not both" }))
      : Effect.succeed({ purl: input.purl.value })
  }
  if (Option.isNone(input.ecosystem) || Option.isNone(input.name)) {
    return Effect.fail(new ApiCommandError({ message: "give --purl P, or --ecosystem E and --name N" }))
  }
  return Effect.succeed({ ecosystem: input.ecosystem.value, name: input.name.value })
}

/**
 * `vdb query`: `POST /v1/query` (docs/api.md, "Package queries"), every page of it. A table of
 * the records (id, aliases, summary), or the OSV records as JSON.
 */
export const queryCommand = Command.make(
  "query",
  { purl, ecosystem, name, version, json, jwt },
  (input) =>
    withClient(
      input.jwt ? "jwt" : "apiKey",
      Effect.gen(function*() {
        const client = yield* ApiClient
        const pkg = yield* packageOf(input)
        const vulns: Array<Record<string, unknown>> = []
        let token: string | undefined
        do {
          const page = yield* client.osv.query({
            payload: {
              package: pkg,
              ...(Option.isSome(input.version) ? { version: input.version.value } : {}),
              ...(token === undefined ? {} : { page_token: token })
            }
          })
          vulns.push(...page.vulns)
          token = page.next_page_token
        } while (token !== undefined)
        if (input.json) return yield* printJson({ vulns })
        if (vulns.length === 0) return yield* Console.log("no known vulnerability affects this package")
        yield* printTable(
          ["id", "aliases", "summary"],
          vulns.map((v) => [
            String(v.id),
            Array.isArray(v.aliases) ? v.aliases.join(", ") : "",
            clip(String(v.summary ?? v.details ?? "").replace(/\s+/g, " "))
          ])
        )
      })
    )
).pipe(Command.withDescription("Records affecting a package (and version): OSV's /v1/query over every source"))
