import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BadRequest, NotFound } from "../../../schema/ErrorBody.ts"
import type { ExploitItem, ExploitSummary } from "../../../schema/ExploitResponse.ts"
import { EXPLOIT_SUMMARY_KEYS } from "../../../schema/Source.ts"
import { identifierProblem, normaliseCve, normaliseIdentifier } from "../../vulns/Identifier.ts"
import type { ExploitRecord } from "../../vulns/Normalised.ts"
import { buildSummary } from "../../vulns/Summary.ts"
import { VulnStore } from "../../vulns/VulnStore.ts"
import type { PageRequest } from "../../vulns/VulnStoreShapes.ts"
import { openAnswerResponse, vulnResponse } from "../AnswerResponses.ts"
import { Api, EXPLOIT_LIMIT_DEFAULT } from "../Api.ts"
import {
  dependenciesOf,
  exploitsAnswer,
  exploitsText,
  infoAnswer,
  infoText,
  type OpenAnswer,
  type VulnAnswer,
  vulnAnswer
} from "../CachedAnswers.ts"
import { ResponseCache } from "../ResponseCache.ts"

const malformed = (raw: string) =>
  new BadRequest({ message: `malformed identifier ${JSON.stringify(raw.slice(0, 100))}` })
const notFound = (id: string) => new NotFound({ message: `${id} is not known to any data source` })

const toItem = (e: ExploitRecord): ExploitItem => ({
  ...e.details,
  uuid: e.uuid,
  cveId: e.cveId,
  source: e.source,
  type: e.type,
  ...(e.url === undefined ? {} : { url: e.url }),
  ...(e.title === undefined ? {} : { title: e.title }),
  ...(e.createdAt === undefined ? {} : { createdAt: e.createdAt })
})

/**
 * The hot path: a cached answer is sent without touching the store, and with as few effect
 * steps as the framework allows (the handlers are plain functions; the clock is read
 * synchronously). A miss builds the answer from the store and the cache keeps it.
 */
export const VulnHandlers = HttpApiBuilder.group(
  Api,
  "vulns",
  Effect.fn(function*(handlers) {
    const store = yield* VulnStore
    const cache = yield* ResponseCache
    const clock = yield* Clock.Clock
    const nowSeconds = () => Math.floor(clock.currentTimeMillisUnsafe() / 1000)

    const infoBuild = (id: string) =>
      Effect.flatMap(store.lookup(id, { bodies: false }), (lookup) => {
        const body = buildSummary(id, lookup)
        return body === undefined
          ? Effect.fail(notFound(id))
          : Effect.succeed(infoAnswer(body, dependenciesOf(id, lookup)))
      })

    // A miss reads the full lookup: its alias rows are what the entry depends on, and its
    // processing rows tell `[]` (a source still processing the identifier) from 404.
    const vulnBuild = (id: string) =>
      Effect.flatMap(
        store.lookup(id),
        (lookup) => lookup.records.length === 0 ? Effect.fail(notFound(id)) : Effect.succeed(vulnAnswer(id, lookup))
      )

    // The lookup names the CVEs a non-CVE query reads exploits of (what the entry depends
    // on), and whether an identifier without exploits is known at all (else 404).
    const exploitsBuild = (id: string, page: PageRequest) =>
      Effect.flatMap(
        Effect.all([store.exploits(id, page), store.lookup(id, { bodies: false })], { concurrency: "unbounded" }),
        ([found, lookup]) => {
          if (found.count === 0 && lookup.records.length === 0) return Effect.fail(notFound(id))
          const summary = Object.fromEntries(
            EXPLOIT_SUMMARY_KEYS.map((k) => [k, found.summary[k] ?? 0])
          ) as unknown as ExploitSummary
          return Effect.succeed(exploitsAnswer(
            { identifier: id, count: found.count, summary, exploits: found.exploits.map(toItem) },
            [...dependenciesOf(id, lookup), ...found.exploits.map((e) => e.cveId)]
          ))
        }
      )

    const infoText_ = (hit: boolean) => (answer: OpenAnswer) => infoText(answer, nowSeconds(), hit)
    const exploitsText_ = (answer: OpenAnswer) => exploitsText(answer, nowSeconds())

    return handlers.handleAll({
      info: ({ params, request }) => {
        const problem = identifierProblem(params.identifier)
        if (problem !== undefined) return Effect.fail(new BadRequest({ message: problem }))
        const id = normaliseCve(params.identifier)
        // /info knows only CVE forms; any other well-formed text is in no source (404, as spec 1 lists).
        if (id === undefined) return Effect.fail(notFound(params.identifier.slice(0, 100)))
        const key = `info\u0000${id}`
        const hit = cache.peek<OpenAnswer>(key)
        if (hit !== undefined) return Effect.succeed(openAnswerResponse(hit.value, request, infoText_(true)))
        return Effect.map(
          cache.serve(key, infoBuild(id)),
          (served) => openAnswerResponse(served.value, request, infoText_(served.hit))
        )
      },

      vuln: ({ params, request }) => {
        const problem = identifierProblem(params.identifier)
        if (problem !== undefined) return Effect.fail(new BadRequest({ message: problem }))
        const id = normaliseIdentifier(params.identifier)
        if (id === undefined) return Effect.fail(malformed(params.identifier))
        const key = `vuln\u0000${id}`
        const grew = (bytes: number) => cache.grew(key, bytes)
        const hit = cache.peek<VulnAnswer>(key)
        if (hit !== undefined) return Effect.succeed(vulnResponse(hit.value, request, grew))
        return Effect.map(cache.serve(key, vulnBuild(id)), (served) => vulnResponse(served.value, request, grew))
      },

      vulnMissing: () => Effect.fail(new BadRequest({ message: "identifier missing: GET /v1/vuln/{identifier}" })),

      exploits: ({ params, query, request }) => {
        const problem = identifierProblem(params.identifier)
        if (problem !== undefined) return Effect.fail(new BadRequest({ message: problem }))
        const id = normaliseIdentifier(params.identifier)
        if (id === undefined) return Effect.fail(malformed(params.identifier))
        const page = {
          limit: query.limit ?? EXPLOIT_LIMIT_DEFAULT,
          offset: query.offset ?? 0,
          includeContent: query.include_content ?? false
        }
        const key = `exploits\u0000${id}\u0000${page.limit}\u0000${page.offset}\u0000${page.includeContent}`
        return Effect.map(
          cache.serve(key, exploitsBuild(id, page)),
          (served) => openAnswerResponse(served.value, request, exploitsText_)
        )
      }
    })
  })
)
