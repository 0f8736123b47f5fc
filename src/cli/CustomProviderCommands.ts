import { Console, DateTime, Effect, Option, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { CustomProviderAdminClient, CustomProviderAdminError } from "../admin/CustomProviderAdminRpcs.ts"
import type { CustomProvider, CustomSurface } from "../providers/custom/CustomProvider.ts"
import { printFields, printJson, printTable } from "./Output.ts"
import { refusalsAs } from "./Refusals.ts"

/** A refused `bin/vdb gateway custom-provider` command: one line for stderr, exit 1. */
export class CustomProviderCommandError extends Schema.TaggedError<CustomProviderCommandError>()(
  "CustomProviderCommandError",
  { message: Schema.String }
) {}

const refuse = (message: string) => Effect.fail(new CustomProviderCommandError({ message }))

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const SURFACES: ReadonlyArray<CustomSurface> = ["chat", "responses", "messages"]

const org = Flag.String("org").pipe(Flag.withDescription("Organization UUID"))
const slug = Flag.String("slug").pipe(
  Flag.withDescription("The provider's slug (first path segment of its gateway routes)")
)
const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON"), Flag.withDefault(false))

const validOrg = (raw: string) =>
  UUID.test(raw.trim())
    ? Effect.succeed(raw.trim().toLowerCase())
    : refuse(`--org: not a UUID: ${JSON.stringify(raw.slice(0, 80))}`)

/** `chat,responses`: each one of the custom surfaces (never `kiro`). */
const validSurfaces = (raw: string) => {
  const names = raw.split(",").map((s) => s.trim()).filter((s) => s !== "")
  if (names.length === 0) return refuse("--surface: name at least one of chat, responses, messages")
  for (const name of names) {
    if (name === "kiro") return refuse("--surface: a custom provider cannot serve the kiro surface")
    if (!(SURFACES as ReadonlyArray<string>).includes(name)) {
      return refuse(`--surface: ${JSON.stringify(name.slice(0, 80))} is not one of ${SURFACES.join(", ")}`)
    }
  }
  return Effect.succeed(names as Array<CustomSurface>)
}

/** `--header name:value`, repeatable: key-free defaults only (the server refuses credential headers). */
const validHeaders = (raw: ReadonlyArray<string>) => {
  const headers: Record<string, string> = {}
  for (const entry of raw) {
    const colon = entry.indexOf(":")
    if (colon <= 0) return refuse(`--header: ${JSON.stringify(entry.slice(0, 80))} is not name:value`)
    headers[entry.slice(0, colon).trim()] = entry.slice(colon + 1).trim()
  }
  return Effect.succeed(headers)
}

const refusal = refusalsAs(CustomProviderAdminError, refuse)

const providerJson = (p: CustomProvider) => ({
  org_uuid: p.org_uuid,
  slug: p.slug,
  base_url: p.base_url,
  surfaces: p.surfaces,
  auth: p.auth,
  default_headers: p.default_headers,
  created_at: DateTime.formatIso(p.created_at)
})

const headerText = (headers: Readonly<Record<string, string>>) =>
  Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join("; ") || "-"

const add = Command.make(
  "add",
  {
    org,
    slug,
    url: Flag.String("url").pipe(
      Flag.withDescription("https base URL; surface paths are appended (/chat/completions, /responses, /messages)")
    ),
    surface: Flag.String("surface").pipe(Flag.withDescription("Comma-separated: chat, responses, messages")),
    auth: Flag.String("auth").pipe(Flag.withDescription("bearer (default), x-api-key or header:NAME"), Flag.optional),
    header: Flag.String("header").pipe(
      Flag.withDescription("Key-free default header name:value (repeatable)"),
      Flag.atLeast(0)
    ),
    json
  },
  Effect.fnUntraced(function*(input) {
    const client = yield* CustomProviderAdminClient
    const uuid = yield* validOrg(input.org)
    const surfaces = yield* validSurfaces(input.surface)
    const defaultHeaders = yield* validHeaders(input.header)
    const created = yield* client.CustomProviderAdd({
      org: uuid,
      provider: {
        slug: input.slug,
        base_url: input.url,
        surfaces,
        ...(Option.isSome(input.auth) ? { auth: input.auth.value } : {}),
        default_headers: defaultHeaders
      }
    }).pipe(refusal)
    if (input.json) return yield* printJson(providerJson(created))
    yield* printFields([
      ["slug", created.slug],
      ["base_url", created.base_url],
      ["surfaces", created.surfaces.join(",")],
      ["auth", created.auth],
      ["default_headers", headerText(created.default_headers)]
    ])
    yield* Console.error(
      `store its key with: vdb gateway provider-key set --org ${uuid} --provider ${created.slug} < keyfile`
    )
  })
).pipe(Command.withDescription("Register a custom provider (https, public addresses only; never the kiro surface)"))

const list = Command.make(
  "list",
  { org, json },
  Effect.fnUntraced(function*(input) {
    const client = yield* CustomProviderAdminClient
    const uuid = yield* validOrg(input.org)
    const providers = yield* client.CustomProviderList({ org: uuid }).pipe(refusal)
    if (input.json) return yield* printJson(providers.map(providerJson))
    if (providers.length === 0) return yield* Console.log(`no custom providers for ${uuid}`)
    yield* printTable(
      ["SLUG", "BASE URL", "SURFACES", "AUTH", "CREATED"],
      providers.map((p) => [p.slug, p.base_url, p.surfaces.join(","), p.auth, DateTime.formatIso(p.created_at)])
    )
  })
).pipe(Command.withDescription("List an organization's custom providers"))

const remove = Command.make(
  "remove",
  { org, slug },
  Effect.fnUntraced(function*(input) {
    const client = yield* CustomProviderAdminClient
    const uuid = yield* validOrg(input.org)
    yield* client.CustomProviderRemove({ org: uuid, slug: input.slug }).pipe(refusal)
    yield* Console.log(`removed custom provider ${input.slug} (and its stored key) for ${uuid}`)
  })
).pipe(Command.withDescription("Remove a custom provider and its stored key"))

/** `bin/vdb gateway custom-provider ...`: needs `CustomProviderAdminClient`. */
export const customProviderCommand = Command.make("custom-provider").pipe(
  Command.withDescription("An organization's own providers (https, public addresses only)"),
  Command.withSubcommands([add, list, remove])
)
