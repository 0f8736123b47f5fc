import { Effect, Result } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { BadRequest, NotFound } from "../../../schema/ErrorBody.ts"
import type { OsvQuery } from "../../../schema/OsvQuery.ts"
import { PackageIndex, type PackageRecord } from "../../vulns/PackageIndex.ts"
import { packageKey } from "../../vulns/PackageNames.ts"
import { Api } from "../Api.ts"
import { vulnResponse } from "../AnswerResponses.ts"
import type { VulnAnswer } from "../CachedAnswers.ts"
import { weakEtag } from "../Conditional.ts"
import { identifierProblem, normaliseIdentifier } from "../../vulns/Identifier.ts"
import { BATCH_MAX_QUERIES, BATCH_PAGE_SIZE, CHANGES_LIMIT_DEFAULT, QUERY_PAGE_SIZE } from "../OsvApi.ts"
import { matchingRecords, pageOf, pageOffset } from "../PackageMatch.ts"
import { packageTarget, type PackageTarget } from "../PackageTarget.ts"
import { ResponseCache } from "../ResponseCache.ts"

const encoder = new TextEncoder()
const JSON_TYPE = "application/json"
const CURSOR = /^[0-9]{1,19}$/

/** What one query resolves to before the index is read; `at` names the batch entry in messages. */
const resolve = (query: OsvQuery, at: string): Result.Result<PackageTarget, BadRequest> => {
  if (query.commit !== undefined) return Result.fail(new BadRequest({ message: `${at}commit queries are not supported; query by package and version` }))
  if (query.package === undefined) return Result.fail(new BadRequest({ message: `${at}package is required` }))
  return Result.mapError(packageTarget(query.package, query.version), (e) => new BadRequest({ message: `${at}${e.message}` }))
}

const jsonResponse = (text: string) => {
  const body = encoder.encode(text)
  return HttpServerResponse.uint8Array(body, { contentType: JSON_TYPE, headers: { etag: weakEtag(body) } })
}

/**
 * `/v1/query`, `/v1/querybatch`, `/v1/vulns/{id}`, `/v1/changes`. A package's
 * records (with their index entries) are kept in the response cache under the
 * package and every identifier they hold, so an ingest that changes a range or
 * adds a record drops them at once, here and in every other process
 * (`ResponseCache`); versions are evaluated per request against them.
 */
export const OsvHandlers = HttpApiBuilder.group(Api, "osv", Effect.fn(function*(handlers) {
  const index = yield* PackageIndex
  const cache = yield* ResponseCache

  const packageRecords = (target: PackageTarget) =>
    Effect.map(
      cache.serve(
        `pkg\u0000${target.base}\u0000${target.name}`,
        Effect.map(index.records(target.base, target.name), (records) => ({
          value: records,
          bytes: records.reduce((n, r) => n + r.osv.length * 2 + 256 * r.entries.length, 0),
          dependsOn: [packageKey(target.base, target.name), ...records.map((r) => r.id)]
        }))
      ),
      (served) => served.value
    )

  const matches = (target: PackageTarget): Effect.Effect<ReadonlyArray<PackageRecord>, BadRequest> =>
    Effect.flatMap(packageRecords(target), (records) => Effect.fromResult(matchingRecords(records, target)))

  return handlers.handleAll({
    query: ({ payload }) =>
      Effect.gen(function*() {
        const target = yield* Effect.fromResult(resolve(payload, ""))
        const offset = yield* Effect.fromResult(pageOffset(payload.page_token))
        const found = yield* matches(target)
        const { next, page } = pageOf(found, offset, QUERY_PAGE_SIZE)
        const tail = next === undefined ? "" : `,"next_page_token":${JSON.stringify(next)}`
        return jsonResponse(`{"vulns":[${page.map((r) => r.osv).join(",")}]${tail}}`)
      }),

    querybatch: ({ payload }) =>
      Effect.gen(function*() {
        if (payload.queries.length > BATCH_MAX_QUERIES) {
          return yield* new BadRequest({ message: `too many queries: ${payload.queries.length}, at most ${BATCH_MAX_QUERIES} a batch` })
        }
        const resolved = yield* Effect.forEach(payload.queries, (query, n) =>
          Effect.fromResult(Result.flatMap(resolve(query, `queries[${n}]: `), (target) =>
            Result.map(pageOffset(query.page_token), (offset) => ({ target, offset })))))
        const results = yield* Effect.forEach(resolved, ({ offset, target }) =>
          Effect.map(matches(target), (found) => {
            const { next, page } = pageOf(found, offset, BATCH_PAGE_SIZE)
            return {
              vulns: page.map((r) => ({ id: r.id, modified: r.modified })),
              ...(next === undefined ? {} : { next_page_token: next })
            }
          }), { concurrency: 8 })
        return jsonResponse(JSON.stringify({ results }))
      }),

    osvRecord: ({ params, request }) => {
      const problem = identifierProblem(params.id)
      if (problem !== undefined) return Effect.fail(new BadRequest({ message: problem }))
      const id = normaliseIdentifier(params.id)
      if (id === undefined) return Effect.fail(new BadRequest({ message: `malformed identifier ${JSON.stringify(params.id.slice(0, 100))}` }))
      const key = `osv\u0000${id}`
      const build = Effect.flatMap(index.record(id), (osv) => {
        if (osv === undefined) return Effect.fail(new NotFound({ message: `${id} has no OSV record in any data source` }))
        const identity = encoder.encode(osv)
        return Effect.succeed({ value: { etag: weakEtag(identity), identity } as VulnAnswer, bytes: identity.byteLength, dependsOn: [id] })
      })
      return Effect.map(cache.serve(key, build), (served) => vulnResponse(served.value, request, (bytes) => cache.grew(key, bytes)))
    },

    changes: ({ query }) =>
      Effect.gen(function*() {
        const since = query.since ?? "0"
        if (!CURSOR.test(since)) return yield* new BadRequest({ message: "invalid since: pass a next_cursor from an earlier answer" })
        const limit = query.limit ?? CHANGES_LIMIT_DEFAULT
        const rows = yield* index.changes(BigInt(since), limit + 1)
        const page = rows.slice(0, limit)
        return {
          changes: page.map((c) => ({ id: c.id, modified: c.modified })),
          next_cursor: page.length === 0 ? since : page[page.length - 1]!.cursor,
          has_more: rows.length > limit
        }
      })
  })
}))
