import { Clock, Config, Console, Duration, Effect, Option, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import { ApiUrl, credentialsFromFile, credentialsPath, httpAddress } from "../api/ApiCredentials.ts"
import { parseApiKey } from "../auth/ApiKey.ts"
import { Host, ServicePorts, urlHostOf } from "../config/AppConfig.ts"
import { DEVICE_CODE_GRANT_TYPE } from "../site/Api.ts"
import { printJson } from "./Output.ts"

/** A failed `bin/vdb auth ...` command; `message` is the one line the CLI root prints. */
export class AuthCommandError extends Schema.TaggedError<AuthCommandError>()("AuthCommandError", {
  message: Schema.String
}) {}

const fail = (message: string) => Effect.fail(new AuthCommandError({ message }))

const VERSION = "0.1.0"
const USER_AGENT = `vdb-cli/${VERSION} (${process.platform})`

/** `VDB_SITE_URL`, else the local server's site (`VDB_HOST`, `VDB_SITE_PORT`), as `ApiUrl` does for the API. */
const SITE_DEFAULT = "VDB_SITE_URL (or VDB_HOST with VDB_SITE_PORT)"
const API_DEFAULT = "VDB_API_URL (or VDB_HOST with VDB_API_PORT)"

/** `given` (named `givenAs`) when set, else the configured default: checked (`httpAddress`), without a trailing slash. */
const addressOf = (given: string | undefined, givenAs: string, fallback: Config.Config<string>, fallbackAs: string) =>
  Effect.map(
    given !== undefined && given !== ""
      ? httpAddress(given, givenAs)
      : Effect.flatMap(Effect.orDie(fallback), (url) => httpAddress(url, fallbackAs)),
    trimSlash
  )

const SiteUrl = Config.all({ explicit: Config.option(Config.String("VDB_SITE_URL")), host: Host, ports: ServicePorts })
  .pipe(
    Config.map(({ explicit, host, ports }) =>
      Option.getOrElse(explicit, () => `http://${urlHostOf(host)}:${ports.site}`)
    )
  )
/** What `auth login` writes: never the device code. */
export interface StoredCredential {
  readonly type: "apikey"
  readonly orgUuid: string
  readonly apiKey: string
  readonly site: string
  readonly api: string
}

const readStored = (path: string): StoredCredential | undefined => {
  try {
    const data = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>
    return data.type === "apikey" && typeof data.orgUuid === "string" && typeof data.apiKey === "string"
      ? {
        type: "apikey",
        orgUuid: data.orgUuid,
        apiKey: data.apiKey,
        site: typeof data.site === "string" ? data.site : "",
        api: typeof data.api === "string" ? data.api : ""
      }
      : undefined
  } catch {
    return undefined
  }
}

/** Written to a 0600 temporary file in the same folder, then renamed: never readable by others, never half-written. */
const writeStored = (path: string, credential: StoredCredential) =>
  Effect.try({
    try: () => {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      const temporary = `${path}.${process.pid}.tmp`
      writeFileSync(temporary, `${JSON.stringify(credential, null, 2)}\n`, { mode: 0o600 })
      chmodSync(temporary, 0o600)
      renameSync(temporary, path)
    },
    catch: (cause) => new AuthCommandError({ message: `cannot write ${path}: ${(cause as Error).message}` })
  })

const trimSlash = (url: string) => url.replace(/\/+$/, "")

interface Answer {
  readonly status: number
  readonly body: Record<string, unknown>
}

const request = (url: string, init: RequestInit, what: string) =>
  Effect.tryPromise({
    try: async (signal): Promise<Answer> => {
      const response = await fetch(url, { ...init, signal, headers: { "user-agent": USER_AGENT, ...init.headers } })
      const text = await response.text()
      let body: Record<string, unknown> = {}
      try {
        const parsed: unknown = JSON.parse(text)
        if (typeof parsed === "object" && parsed !== null) body = parsed as Record<string, unknown>
      } catch {
        // Not JSON: the status alone says what happened.
      }
      return { status: response.status, body }
    },
    catch: () => new AuthCommandError({ message: `cannot reach ${what} at ${new URL(url).origin}` })
  })

const str = (value: unknown) => typeof value === "string" ? value : ""

/**
 * What the site sends is shown on the user's terminal and stored: a user code of printable ASCII,
 * a verification address that is an http(s) URL (shown as parsed, so control characters arrive
 * percent-encoded), never raw escape sequences a hostile or intercepted answer could carry.
 */
const USER_CODE = /^[\x21-\x7e]{1,32}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const shownUrl = (raw: string): string | undefined => {
  try {
    const url = new URL(raw)
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : undefined
  } catch {
    return undefined
  }
}

/** "in 15 minutes", and in seconds under a minute and a half (a rounded "0 minutes" says nothing). */
const expiresText = (seconds: number) =>
  seconds < 90 ? `${Math.max(1, Math.round(seconds))} seconds` : `${Math.round(seconds / 60)} minutes`

const login = Command.make(
  "login",
  {
    site: Flag.String("site").pipe(
      Flag.withDescription(
        "The vdb site (default $VDB_SITE_URL, else http://$VDB_HOST:$VDB_SITE_PORT, i.e. http://127.0.0.1:8082)"
      ),
      Flag.optional
    ),
    api: Flag.String("api").pipe(
      Flag.withDescription(
        "The API the credential is for (default $VDB_API_URL, else http://$VDB_HOST:$VDB_API_PORT/v1)"
      ),
      Flag.optional
    )
  },
  Effect.fn(function*(input) {
    const site = yield* addressOf(Option.getOrUndefined(input.site), "--site", SiteUrl, SITE_DEFAULT)
    const api = yield* addressOf(Option.getOrUndefined(input.api), "--api", ApiUrl, API_DEFAULT)
    const started = yield* request(`${site}/api/site/v1/cli/device/authorize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "vdb-cli", client_version: VERSION })
    }, "the site")
    if (started.status !== 200) {
      const retry = started.status === 429 ? " (too many sign-in requests; wait a minute)" : ""
      return yield* fail(`the site refused the sign-in request: HTTP ${started.status}${retry}`)
    }
    const deviceCode = str(started.body.device_code)
    const userCode = str(started.body.user_code)
    const verifyAt = shownUrl(str(started.body.verification_uri_complete) || str(started.body.verification_uri))
    const expiresIn = Number(started.body.expires_in) || 900
    let interval = Math.max(1, Number(started.body.interval) || 5)
    if (deviceCode === "" || userCode === "") return yield* fail("the site answered without a device code")
    if (!USER_CODE.test(userCode) || verifyAt === undefined) {
      return yield* fail("the site answered with a malformed user code or verification address; is --site a vdb site?")
    }

    yield* Console.log(`! First copy your one-time code: ${userCode}`)
    yield* Console.log(`Open ${verifyAt} in your browser, sign in as a member of the organization and approve.`)
    yield* Console.log(
      "(No member yet? An administrator adds one: bin/vdb member create --org UUID --email E, the password on stdin.)"
    )
    yield* Console.log(`Waiting for approval (the code expires in ${expiresText(expiresIn)})...`)

    const deadline = (yield* Clock.currentTimeMillis) + expiresIn * 1000
    for (;;) {
      yield* Effect.sleep(Duration.seconds(interval))
      if ((yield* Clock.currentTimeMillis) >= deadline) {
        return yield* fail("the code expired before it was approved; run `vdb auth login` again")
      }
      const polled = yield* request(`${site}/api/site/v1/cli/device/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode }).toString()
      }, "the site")
      if (polled.status === 200 && polled.body.type === "apikey") {
        const orgUuid = str(polled.body.orgUuid) || str(polled.body.org_uuid)
        const apiKey = str(polled.body.api_key)
        if (orgUuid === "" || apiKey === "") return yield* fail("the site answered with an incomplete credential")
        if (!UUID.test(orgUuid) || parseApiKey(apiKey)?.orgUuid !== orgUuid.toLowerCase()) {
          return yield* fail("the site answered with a malformed credential; nothing was stored")
        }
        const path = yield* credentialsPath
        yield* writeStored(path, { type: "apikey", orgUuid, apiKey, site, api })
        yield* Console.log(`✓ Signed in to organization ${orgUuid}. Credentials saved to ${path}`)
        return
      }
      switch (str(polled.body.error)) {
        case "authorization_pending":
          continue
        case "slow_down":
          interval += 5
          continue
        case "expired_token":
          return yield* fail("the code expired before it was approved; run `vdb auth login` again")
        case "access_denied":
          return yield* fail("the sign-in was denied in the browser")
        default:
          return yield* fail(`the site refused the sign-in: HTTP ${polled.status} ${str(polled.body.error)}`.trim())
      }
    }
  })
).pipe(Command.withDescription("Sign in through the browser (device code); stores an API key for this machine"))

const loadStored = Effect.gen(function*() {
  const path = yield* credentialsPath
  const stored = readStored(path)
  if (stored === undefined) return yield* fail(`not signed in (no credential in ${path}); run \`vdb auth login\``)
  return { path, stored }
})

const verify = Command.make("verify", {}, () =>
  Effect.gen(function*() {
    const { path, stored } = yield* loadStored
    const api = yield* addressOf(stored.api, `the api in ${path}`, ApiUrl, API_DEFAULT)
    // Any authenticated lookup will do: 200 or 404 both mean the key was accepted.
    const answer = yield* request(
      `${api}/info/CVE-2021-44228`,
      { headers: { authorization: stored.apiKey } },
      "the API"
    )
    if (answer.status === 200 || answer.status === 404) {
      return yield* Console.log(`✓ The stored credential works (organization ${stored.orgUuid}, ${api})`)
    }
    if (answer.status === 429) {
      return yield* Console.log(
        `✓ The stored credential works (organization ${stored.orgUuid}); the API is rate limiting it right now`
      )
    }
    return yield* fail(`the API refused the stored credential (HTTP ${answer.status}); run \`vdb auth login\` again`)
  })).pipe(Command.withDescription("Exit 0 when the stored credential works against the vulnerability API"))

/** The credentials file holds an organization's secret written by hand (which `bin/vdb info` uses), not a sign-in. */
const handWritten = (path: string) => {
  const found = readStored(path) === undefined ? credentialsFromFile(path) : undefined
  return found !== undefined && "secret" in found ? found.orgUuid : undefined
}

const status = Command.make(
  "status",
  { json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON"), Flag.withDefault(false)) },
  (input) =>
    Effect.gen(function*() {
      const path = yield* credentialsPath
      const stored = readStored(path)
      if (stored === undefined) {
        const orgUuid = handWritten(path)
        if (input.json) {
          yield* printJson(
            orgUuid === undefined
              ? { signedIn: false, file: path }
              : { signedIn: false, orgUuid, credential: "organization secret", file: path }
          )
        }
        return yield* fail(
          orgUuid === undefined
            ? `not signed in (no credential in ${path}); run \`vdb auth login\``
            : `not signed in: ${path} holds organization ${orgUuid}'s secret, written by hand (bin/vdb info|vuln|exploits use it); \`vdb auth login\` replaces it with a sign-in`
        )
      }
      if (input.json) {
        return yield* printJson({
          signedIn: true,
          orgUuid: stored.orgUuid,
          site: stored.site,
          api: stored.api,
          file: path
        })
      }
      yield* Console.log(`Signed in to organization ${stored.orgUuid}`)
      yield* Console.log(`  site: ${stored.site || "(unknown)"}`)
      yield* Console.log(`  api:  ${stored.api || "(default)"}`)
      yield* Console.log(`  credential file: ${path}`)
    })
).pipe(Command.withDescription("Show which organization this machine is signed in to (never the key)"))

const logout = Command.make("logout", {}, () =>
  Effect.gen(function*() {
    const path = yield* credentialsPath
    if (readStored(path) === undefined) {
      const orgUuid = handWritten(path)
      // An organization's secret is shown once, when it is made: this file may be its only copy, so it is not deleted here.
      if (orgUuid !== undefined) {
        return yield* fail(
          `${path} holds organization ${orgUuid}'s secret, written by hand, not a sign-in; it was left in place: delete it yourself once the secret is kept elsewhere`
        )
      }
      return yield* Console.log("Not signed in.")
    }
    yield* Effect.try({
      try: () => rmSync(path, { force: true }),
      catch: (cause) => new AuthCommandError({ message: `cannot remove ${path}: ${(cause as Error).message}` })
    })
    yield* Console.log(
      `Signed out: removed ${path}. (The organization's API key itself stays valid until \`vdb org rotate-secret\`.)`
    )
  })).pipe(Command.withDescription("Remove the stored credential from this machine"))

export const authCommand = Command.make("auth").pipe(
  Command.withDescription("Sign this machine in to vdb through the browser"),
  Command.withSubcommands([login, verify, status, logout])
)
