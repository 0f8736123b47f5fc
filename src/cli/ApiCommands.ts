import { Clock, Console, Effect, Layer, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { AdminClient } from "../admin/AdminClient.ts"
import { ApiClient, type CredentialMode } from "../api/ApiClient.ts"
import { loadCredentialsAndApi } from "../api/ApiCredentials.ts"
import { hasSecret } from "../auth/OrgCredentials.ts"
import { isOurs } from "../vulns/EnrichmentContainer.ts"
import { identifierProblem, normaliseCve } from "../vulns/Identifier.ts"
import { wholeNumberFlag } from "./NumberFlags.ts"
import { counted, printFields, printJson, printTable } from "./Output.ts"
import { rateLimitLine, type RateLimitWatch, watchingHttpClient } from "./RateLimitHint.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print the response as JSON"), Flag.withDefault(false))
const identifier = Argument.String("identifier").pipe(
  Argument.withDescription("CVE-2021-44228, 2021-44228, GHSA-..., PYSEC-..., EUVD-..., ...")
)
/** `/info` takes the CVE forms only (any other is not known there: docs/api.md, "Identifiers"). */
const cveIdentifier = Argument.String("identifier").pipe(
  Argument.withDescription("CVE-2021-44228 or 2021-44228 (a CVE id; `vuln` also takes GHSA-... and other ids)")
)
const jwt = Flag.Boolean("jwt").pipe(
  Flag.withDescription("Sign in for a short-lived token instead of sending the static API key"),
  Flag.withDefault(false)
)

/**
 * The typed client with credentials from the environment or the credentials file. A 429 says
 * when to retry and how the limit is raised (RateLimitHint.ts), not only "rate limit exceeded".
 */
export const withClient = <A, E, R>(mode: CredentialMode, use: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const { api: baseUrl, credentials } = yield* loadCredentialsAndApi
    if (mode === "jwt" && !hasSecret(credentials)) {
      return yield* new ApiCommandError({
        message: "--jwt signs in with the organization secret (VDB_ORG_UUID and VDB_ORG_SECRET); " +
          "the credential from `bin/vdb auth login` is an API key: leave out --jwt"
      })
    }
    const watch: RateLimitWatch = { last: undefined }
    return yield* Effect.provide(
      use,
      ApiClient.layer({ baseUrl, credentials, mode }).pipe(Layer.provide(watchingHttpClient(watch)))
    ).pipe(
      Effect.catchIf(
        (e): e is E & { readonly _tag: "TooManyRequests" } =>
          (e as { readonly _tag?: unknown })?._tag === "TooManyRequests",
        () =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => fail(rateLimitLine(watch.last, credentials.orgUuid, now)))
      )
    )
  })

/** A command refused before any request; `message` is the one line the CLI root prints. */
export class ApiCommandError extends Schema.TaggedError<ApiCommandError>()("ApiCommandError", {
  message: Schema.String
}) {}

const fail = (message: string) => Effect.fail(new ApiCommandError({ message }))

/**
 * The server refuses the same identifiers (400), but checking here keeps a
 * 10k-character argument off the wire and out of every message.
 */
const validIdentifier = (raw: string) => {
  const problem = identifierProblem(raw)
  return problem === undefined ? Effect.succeed(raw) : fail(problem)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const validOrg = (raw: string) =>
  UUID.test(raw.trim())
    ? Effect.succeed(raw.trim().toLowerCase())
    : fail(`--org: not a UUID: ${JSON.stringify(raw.slice(0, 60))}`)

/**
 * `/info` answers 404 "not known to any data source" for any other form, although `vuln` finds
 * a GHSA id: refused here, before a request, with the command that takes it.
 */
const validCve = (raw: string) =>
  Effect.flatMap(validIdentifier(raw), (identifier) =>
    normaliseCve(identifier) !== undefined
      ? Effect.succeed(identifier)
      : fail(
        `info takes a CVE id (CVE-2021-44228 or 2021-44228), not ${JSON.stringify(identifier.trim().slice(0, 60))}; ` +
          `the records of any identifier: bin/vdb vuln ${identifier.trim()}`
      ))

const info = Command.make(
  "info",
  { identifier: cveIdentifier, json, jwt },
  (input) =>
    withClient(
      input.jwt ? "jwt" : "apiKey",
      Effect.gen(function*() {
        const client = yield* ApiClient
        const s = yield* client.vulns.info({ params: { identifier: yield* validCve(input.identifier) } })
        if (input.json) return yield* printJson(s)
        yield* printFields([
          ["identifier", s._identifier],
          ["sources", s.sources.map((x) => x.processing ? `${x.name} (processing)` : x.name).join(", ")],
          ["aliases", s.aliases.join(", ") || "-"],
          ["gcve", s.gcve ? "yes" : "no"],
          ["references", String(s.references)],
          ["metrics", String(s.metrics)],
          ["affected", String(s.affected)],
          ["cached", s.cache_hit ? "yes" : "no"]
        ])
      })
    )
).pipe(Command.withDescription("Coverage and count summary of a CVE"))

const vuln = Command.make(
  "vuln",
  { identifier, json, jwt },
  (input) =>
    withClient(
      input.jwt ? "jwt" : "apiKey",
      Effect.gen(function*() {
        const client = yield* ApiClient
        const records = yield* client.vulns.vuln({ params: { identifier: yield* validIdentifier(input.identifier) } })
        if (input.json) return yield* printJson(records)
        yield* printTable(
          ["source", "id", "title"],
          records.map((r: any) => [
            // This service's enrichment container names the source; it is not always the first ADP container.
            String((Array.isArray(r.containers?.adp) ? r.containers.adp : []).find(isOurs)?.x_dataSource ?? "-"),
            String(r.cveMetadata?.cveId ?? "-"),
            clip(String(r.containers?.cna?.title ?? ""), TITLE_WIDTH)
          ])
        )
      })
    )
).pipe(Command.withDescription("CVE Record Format 5.1 records, one per source"))

/** The title column's width: a longer title ends in "…" so the cut shows. */
const TITLE_WIDTH = 80
const clip = (text: string, width: number) => text.length > width ? `${text.slice(0, width - 1)}…` : text

const exploits = Command.make("exploits", {
  identifier,
  json,
  jwt,
  limit: wholeNumberFlag("limit", "Records per page (default 100)", { min: 1, max: 1000 }).pipe(Flag.optional),
  offset: wholeNumberFlag("offset", "Records to skip (default 0)", { min: 0 }).pipe(Flag.optional),
  includeContent: Flag.Boolean("include-content").pipe(
    Flag.withDescription("Include each exploit's raw body (source code, template) where stored"),
    Flag.withDefault(false)
  )
}, (input) =>
  withClient(
    input.jwt ? "jwt" : "apiKey",
    Effect.gen(function*() {
      const client = yield* ApiClient
      const identifier = yield* validIdentifier(input.identifier)
      const page = yield* client.vulns.exploits({
        params: { identifier },
        query: {
          ...Option.match(input.limit, { onNone: () => ({}), onSome: (limit) => ({ limit }) }),
          ...Option.match(input.offset, { onNone: () => ({}), onSome: (offset) => ({ offset }) }),
          ...(input.includeContent ? { include_content: true } : {})
        }
      })
      if (input.json) return yield* printJson(page)
      yield* Console.log(`${page.identifier}: ${counted(page.count, "exploit record")}`)
      yield* printTable(
        ["date", "source", "type", "url"],
        page.exploits.map((e) => [
          e.createdAt === undefined ? "-" : new Date(e.createdAt * 1000).toISOString().slice(0, 10),
          e.source ?? "-",
          e.type ?? "-",
          e.url ?? "-"
        ])
      )
    })
  )).pipe(Command.withDescription("Exploit, proof-of-concept and sighting records, newest first"))

const usage = Command.make("usage", {
  json,
  org: Flag.String("org").pipe(Flag.withDescription("Only this organization UUID"), Flag.optional),
  since: Flag.String("since").pipe(
    Flag.withDescription("Only requests at or after this date (ISO 8601)"),
    Flag.optional
  )
}, (input) =>
  Effect.gen(function*() {
    const since = Option.getOrUndefined(input.since)
    const sinceDate = since === undefined ? undefined : new Date(since)
    if (sinceDate !== undefined && Number.isNaN(sinceDate.getTime())) {
      return yield* fail(`--since: not a date: ${JSON.stringify(since!.slice(0, 60))} (ISO 8601, e.g. 2026-01-31)`)
    }
    const orgUuid = Option.isSome(input.org) ? yield* validOrg(input.org.value) : undefined
    const admin = yield* AdminClient
    const summary = yield* admin.UsageSummary({ orgUuid, since: sinceDate?.toISOString() })
    if (input.json) return yield* printJson(summary)
    yield* printTable(
      ["organization", "route", "requests", "errors", "429", "avg ms", "p99 ms", "last"],
      summary.rows.map((r) => [
        r.orgUuid ?? "(unauthenticated)",
        r.route,
        String(r.requests),
        String(r.errors),
        String(r.rateLimited),
        r.avgLatencyMs.toFixed(1),
        r.p99LatencyMs.toFixed(1),
        r.lastAt
      ])
    )
    yield* Console.log(`dropped (queue full): ${summary.dropped}`)
  })).pipe(Command.withDescription("Summarise the API usage log"))

/** `vdb info|vuln|exploits` (API clients) and `vdb usage` (through the admin socket). */
export const apiCommands = [info, vuln, exploits] as const
export const usageCommand = usage
