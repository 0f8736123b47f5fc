import { readFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { Config, Effect, Option, Redacted, Schema } from "effect"
import type { OrgSecretCredentials } from "./ApiClient.ts"

/** The API base address; it ends in the version segment like the spec's `{base_url}`. */
export const ApiUrl = Config.String("VDB_API_URL").pipe(Config.withDefault("http://127.0.0.1:8080/v1"))

const EnvCredentials = Config.all({
  orgUuid: Config.option(Config.String("VDB_ORG_UUID")),
  secret: Config.option(Config.Redacted("VDB_ORG_SECRET"))
})

export class CredentialsMissing extends Schema.TaggedError<CredentialsMissing>()("CredentialsMissing", {
  message: Schema.String
}) {}

export const credentialsFile = () => join(homedir(), ".config", "vdb", "credentials.json")

/** Accepts the camelCase and snake_case spellings the device sign-in may write. */
const fromFile = (path: string): OrgSecretCredentials | undefined => {
  try {
    const data = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>
    const uuid = data.orgUuid ?? data.org_uuid ?? data.uuid
    const secret = data.secret ?? data.orgSecret ?? data.org_secret
    return typeof uuid === "string" && typeof secret === "string"
      ? { orgUuid: uuid, secret: Redacted.make(secret) }
      : undefined
  } catch {
    return undefined
  }
}

/** `VDB_ORG_UUID` + `VDB_ORG_SECRET`, else `~/.config/vdb/credentials.json`. */
export const loadCredentials = Effect.gen(function*() {
  const env = yield* Effect.orDie(EnvCredentials)
  if (Option.isSome(env.orgUuid) && Option.isSome(env.secret)) {
    return { orgUuid: env.orgUuid.value, secret: env.secret.value } satisfies OrgSecretCredentials
  }
  const path = credentialsFile()
  const stored = fromFile(path)
  if (stored !== undefined) return stored
  return yield* new CredentialsMissing({
    message: `no credentials: set VDB_ORG_UUID and VDB_ORG_SECRET, or sign in to write ${path}`
  })
})
