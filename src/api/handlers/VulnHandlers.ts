import { Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { BadRequest, NotFound } from "../../../schema/ErrorBody.ts"
import type { ExploitItem, ExploitSummary } from "../../../schema/ExploitResponse.ts"
import type { ExploitRecord } from "../../vulns/VulnStore.ts"
import { VulnStore } from "../../vulns/VulnStore.ts"
import { EXPLOIT_SUMMARY_KEYS } from "../../../schema/Source.ts"
import { Api, EXPLOIT_LIMIT_DEFAULT } from "../Api.ts"
import { identifierProblem, normaliseCve, normaliseIdentifier } from "../Identifier.ts"
import { buildSummary, summaryKeys } from "../Summary.ts"
import { SummaryCache } from "../SummaryCache.ts"


const malformed = (raw: string) =>
  new BadRequest({ message: `malformed identifier ${JSON.stringify(raw.slice(0, 100))}` })
/** Over-long or control-bearing identifiers: 400 on every endpoint, before any lookup. */
const refused = (raw: string) => {
  const problem = identifierProblem(raw)
  return problem === undefined ? Effect.void : Effect.fail(new BadRequest({ message: problem }))
}
const notFound = (id: string) => new NotFound({ message: `${id} is not known to any data source` })
const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

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

export const VulnHandlers = HttpApiBuilder.group(Api, "vulns", Effect.fn(function*(handlers) {
  const store = yield* VulnStore
  const cache = yield* SummaryCache

  return handlers.handleAll({
    info: Effect.fnUntraced(function*({ params }) {
      yield* refused(params.identifier)
      const id = normaliseCve(params.identifier)
      // /info knows only CVE forms; any other well-formed text is in no source (404, as spec 1 lists).
      if (id === undefined) return yield* notFound(params.identifier.slice(0, 100))
      const cached = yield* cache.get(id)
      if (cached !== undefined) return { ...cached, _timestamp: yield* nowSeconds, cache_hit: true }
      const lookup = yield* store.lookup(id, { bodies: false })
      const body = buildSummary(id, lookup)
      if (body === undefined) return yield* notFound(id)
      yield* cache.set(id, body, summaryKeys(id, lookup))
      return { ...body, _timestamp: yield* nowSeconds, cache_hit: false }
    }),

    vuln: Effect.fnUntraced(function*({ params }) {
      yield* refused(params.identifier)
      const id = normaliseIdentifier(params.identifier)
      if (id === undefined) return yield* malformed(params.identifier)
      const lookup = yield* store.lookup(id, { recordsOnly: true })
      // No record: 404 unless a source still processes the identifier (then `[]`), which only
      // the full lookup tells; rare, so the common path stays one light statement.
      if (lookup.records.length === 0 && (yield* store.lookup(id, { bodies: false })).records.length === 0) {
        return yield* notFound(id)
      }
      // The store keeps each CVE 5.1 record as JSON text; written through as stored, it is
      // what encoding through `VulnRecords` (a record of unknowns) would produce, without the walk.
      const parts = lookup.records.flatMap((r) => r.recordJson === null ? [] : [r.recordJson])
      return HttpServerResponse.text(`[${parts.join(",")}]`, { contentType: "application/json" })
    }),

    vulnMissing: () => Effect.fail(new BadRequest({ message: "identifier missing: GET /v1/vuln/{identifier}" })),

    exploits: Effect.fnUntraced(function*({ params, query }) {
      yield* refused(params.identifier)
      const id = normaliseIdentifier(params.identifier)
      if (id === undefined) return yield* malformed(params.identifier)
      const page = yield* store.exploits(id, {
        limit: query.limit ?? EXPLOIT_LIMIT_DEFAULT,
        offset: query.offset ?? 0,
        includeContent: query.include_content ?? false
      })
      // Unknown everywhere (no exploit and no source record) is 404, like /info and /vuln.
      if (page.count === 0 && (yield* store.lookup(id, { bodies: false })).records.length === 0) return yield* notFound(id)
      const summary = Object.fromEntries(EXPLOIT_SUMMARY_KEYS.map((k) => [k, page.summary[k] ?? 0])) as unknown as ExploitSummary
      return {
        identifier: id,
        timestamp: yield* nowSeconds,
        count: page.count,
        summary,
        exploits: page.exploits.map(toItem)
      }
    })
  })
}))
