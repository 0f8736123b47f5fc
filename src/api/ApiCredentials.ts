import { Config, Effect, Option, Redacted, Schema } from "effect"
import { readFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import type { ClientCredentials, OrgSecretCredentials } from "../auth/OrgCredentials.ts"
import { Host, ServicePorts, urlHostOf } from "../config/AppConfig.ts"

const ExplicitApiUrl = Config.option(Config.String("VDB_API_URL"))

/** The API of a server started in this environment: `http://VDB_HOST:VDB_API_PORT/v1` (defaults 127.0.0.1, 8080). */
const LocalApiUrl = Config.all({ host: Host, ports: ServicePorts }).pipe(
  Config.map(({ host, ports }) => `http://${urlHostOf(host)}:${ports.api}/v1`)
)

/**
 * The API base address; it ends in the version segment like the spec's `{base_url}`. `VDB_API_URL`,
 * else the local server's, from the same `VDB_HOST` and `VDB_API_PORT` `bin/vdb serve` listens on:
 * a user who moved the server's port in this shell is not sent to 8080.
 */
export const ApiUrl = Config.all({ explicit: ExplicitApiUrl, local: LocalApiUrl }).pipe(
  Config.map(({ explicit, local }) => Option.getOrElse(explicit, () => local))
)

const EnvCredentials = Config.all({
  orgUuid: Config.option(Config.String("VDB_ORG_UUID")),
  secret: Config.option(Config.Redacted("VDB_ORG_SECRET"))
})

export class CredentialsMissing extends Schema.TaggedError<CredentialsMissing>()("CredentialsMissing", {
  message: Schema.String
}) {}

/** An address a command would send a credential to that is not an http(s) URL. */
export class AddressInvalid extends Schema.TaggedError<AddressInvalid>()("AddressInvalid", {
  message: Schema.String
}) {}

const MAX_ADDRESS_LENGTH = 2048

/**
 * `value` as the base address of a vdb service, or why not: an http or https URL without user
 * information, of a sane length. `from` names where it came from (a variable, the credentials
 * file), since that is what the user fixes; the value itself is not quoted (it may be anything).
 */
export const httpAddress = (value: string, from: string): Effect.Effect<string, AddressInvalid> => {
  const refuse = (why: string) =>
    Effect.fail(new AddressInvalid({ message: `${from} is not usable as an address: ${why}` }))
  if (value.length > MAX_ADDRESS_LENGTH) return refuse(`longer than ${MAX_ADDRESS_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return refuse("not a URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return refuse("an http or https URL is expected")
  if (url.username !== "" || url.password !== "") return refuse("a URL without user or password is expected")
  return Effect.succeed(value)
}

const ConfigHome = Config.option(Config.String("XDG_CONFIG_HOME"))

/** `$XDG_CONFIG_HOME/vdb/credentials.json` (an absolute XDG_CONFIG_HOME only), else `~/.config/vdb/credentials.json`. */
export const credentialsPath = Effect.gen(function*() {
  const configHome = yield* Effect.orDie(ConfigHome)
  const base = Option.isSome(configHome) && configHome.value.startsWith("/")
    ? configHome.value
    : join(homedir(), ".config")
  return join(base, "vdb", "credentials.json")
})

/**
 * What `bin/vdb auth login` writes (`{type: "apikey", orgUuid, apiKey}`), or a
 * hand-written `{orgUuid, secret}`; camelCase and snake_case spellings.
 */
export const credentialsFromFile = (path: string): ClientCredentials | undefined => {
  try {
    const data = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>
    const uuid = data.orgUuid ?? data.org_uuid ?? data.uuid
    const secret = data.secret ?? data.orgSecret ?? data.org_secret
    const apiKey = data.apiKey ?? data.api_key
    if (typeof uuid !== "string") return undefined
    if (typeof secret === "string") return { orgUuid: uuid, secret: Redacted.make(secret) }
    if (typeof apiKey === "string" && apiKey.startsWith("ApiKey ")) {
      return { orgUuid: uuid, apiKey: Redacted.make(apiKey) }
    }
    return undefined
  } catch {
    return undefined
  }
}

/** The `api` a sign-in stored beside its credential (`auth login --api`), if any. */
const storedApiOf = (path: string): string | undefined => {
  try {
    const api = (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>).api
    return typeof api === "string" && api !== "" ? api : undefined
  } catch {
    return undefined
  }
}

/**
 * The credentials (`loadCredentials`) and the API to send them to: `VDB_API_URL` when set, else
 * the API a sign-in stored with the credential it came from, else the local server's (`ApiUrl`).
 */
export const loadCredentialsAndApi: Effect.Effect<
  { readonly credentials: ClientCredentials; readonly api: string },
  CredentialsMissing | AddressInvalid
> = Effect.gen(function*() {
  const credentials = yield* loadCredentials
  const explicit = yield* Effect.orDie(ExplicitApiUrl)
  if (Option.isSome(explicit)) return { credentials, api: yield* httpAddress(explicit.value, "VDB_API_URL") }
  const path = yield* credentialsPath
  const stored = "apiKey" in credentials ? storedApiOf(path) : undefined
  if (stored !== undefined) return { credentials, api: yield* httpAddress(stored, `the api in ${path}`) }
  return { credentials, api: yield* httpAddress(yield* Effect.orDie(LocalApiUrl), "VDB_HOST with VDB_API_PORT") }
})

/** `VDB_ORG_UUID` + `VDB_ORG_SECRET`, else the credentials file (`credentialsPath`). */
export const loadCredentials: Effect.Effect<ClientCredentials, CredentialsMissing> = Effect.gen(function*() {
  const env = yield* Effect.orDie(EnvCredentials)
  if (Option.isSome(env.orgUuid) && Option.isSome(env.secret)) {
    return { orgUuid: env.orgUuid.value, secret: env.secret.value } satisfies OrgSecretCredentials
  }
  const path = yield* credentialsPath
  const stored = credentialsFromFile(path)
  if (stored !== undefined) return stored
  return yield* new CredentialsMissing({
    message: "no credentials: run `bin/vdb auth login`, or set VDB_ORG_UUID and VDB_ORG_SECRET " +
      `(bin/vdb org create prints both), or write {"orgUuid": ..., "secret": ...} to ${path}`
  })
})
