import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Readable } from "node:stream"
import { BadRequest, NotFound } from "../../../schema/ErrorBody.ts"
import { identifierProblem, normaliseIdentifier } from "../../vulns/Identifier.ts"
import { PackageIndex } from "../../vulns/PackageIndex.ts"
import { packageKey } from "../../vulns/PackageNames.ts"
import { PackageSegments } from "../../vulns/PackageSegments.ts"
import { vulnResponse } from "../AnswerResponses.ts"
import { Api } from "../Api.ts"
import type { VulnAnswer } from "../CachedAnswers.ts"
import { weakEtag } from "../Conditional.ts"
import { BATCH_MAX_QUERIES, CHANGES_LIMIT_DEFAULT, QUERY_PAGE_SIZE } from "../OsvApi.ts"
import { batchResult, matchedOf, pageOffset, pageToken } from "../PackageMatch.ts"
import type { PackageTarget } from "../PackageTarget.ts"
import { compressAnswer, type QueryAnswer, queryKey, queryResponse, resolveQuery, variantOf } from "../QueryAnswers.ts"
import { ResponseCache } from "../ResponseCache.ts"

const encoder = new TextEncoder()
const JSON_TYPE = "application/json"
const CURSOR = /^[0-9]{1,19}$/
const BATCH_HEAD = encoder.encode(`{"results":[`)
const COMMA = encoder.encode(",")
const BATCH_TAIL = encoder.encode("]}")

/** The response cache's key of a package's records and answers. */
const packageEntry = (t: PackageTarget) => `pkg\u0000${t.base}\u0000${t.name}`

/**
 * `/v1/query`, `/v1/querybatch`, `/v1/vulns/{id}`, `/v1/changes`. A package's
 * records (with their index entries) are kept in the response cache under the
 * package and every identifier they hold, so an ingest that changes a range or
 * adds a record drops them at once, here and in every other process
 * (`ResponseCache`). With them is kept what questions about them answered
 * (`PackageSegments`: a version is a binary search among the package's range
 * bounds) and the querybatch results' bytes, which go with them.
 */
export const OsvHandlers = HttpApiBuilder.group(
  Api,
  "osv",
  Effect.fn(function*(handlers) {
    const index = yield* PackageIndex
    const cache = yield* ResponseCache

    /** Each package's records (distinct packages), from the cache, the missing ones read by one statement. */
    const packagesOf = (targets: ReadonlyArray<PackageTarget>) =>
      cache.serveMany(
        targets.map(packageEntry),
        (missing) =>
          Effect.map(index.packages(missing.map((n) => targets[n]!)), (found) =>
            found.map((records, m) => {
              const target = targets[missing[m]!]!
              return {
                value: new PackageSegments(target.base, records),
                bytes: records.reduce(
                  (n, r) => n + 2 * (r.brief.length + r.key.originIdentifier.length) + 256 + 256 * r.entries.length,
                  0
                ),
                dependsOn: [packageKey(target.base, target.name), ...records.map((r) => r.id)]
              }
            }))
      )

    /** What answering grew a package's entry by, counted by the cache (which may then drop others). */
    const grown = (targets: ReadonlyArray<PackageTarget>, packages: ReadonlyArray<PackageSegments>) => {
      for (let n = 0; n < packages.length; n++) {
        const bytes = packages[n]!.takeGrowth()
        if (bytes > 0) cache.grew(packageEntry(targets[n]!), bytes)
      }
    }

    return handlers.handleAll({
      query: ({ payload, request }) =>
        Effect.gen(function*() {
          const target = yield* Effect.fromResult(resolveQuery(payload, ""))
          const offset = yield* Effect.fromResult(pageOffset(payload.page_token))
          // The answer's bytes are kept like /vuln's, dropped with the package or any record on the page.
          const key = queryKey(target, offset)
          const answer = yield* cache.serve<QueryAnswer, never, never>(
            key,
            Effect.gen(function*() {
              const packages = yield* packagesOf([target])
              const pkg = packages[0]!
              const { positions } = matchedOf(pkg, target)
              grown([target], packages)
              const page = Array.from(positions.subarray(offset, offset + QUERY_PAGE_SIZE), (n) => pkg.records[n]!)
              const next = offset + QUERY_PAGE_SIZE < positions.length ? pageToken(offset + QUERY_PAGE_SIZE) : undefined
              // The page's OSV texts as stored, joined as they are (never parsed or encoded again).
              const texts = (yield* index.texts(page.map((r) => r.key))).filter((t) => t !== "")
              const tail = next === undefined ? "" : `,"next_page_token":${JSON.stringify(next)}`
              const body = encoder.encode(`{"vulns":[${texts.join(",")}]${tail}}`)
              return {
                value: { body, etag: weakEtag(body) },
                bytes: body.byteLength,
                dependsOn: [packageKey(target.base, target.name), ...page.map((r) => r.id)]
              }
            })
          )
          const variant = variantOf(answer.value, request.headers["accept-encoding"])
          if (variant !== "identity") {
            yield* compressAnswer(answer.value, variant, (bytes) => cache.grew(key, bytes))
          }
          return queryResponse(answer.value, variant)
        }),

      querybatch: ({ payload }) =>
        Effect.gen(function*() {
          if (payload.queries.length > BATCH_MAX_QUERIES) {
            return yield* new BadRequest({
              message: `too many queries: ${payload.queries.length}, at most ${BATCH_MAX_QUERIES} a batch`
            })
          }
          // Every query checked before anything is read; each package read once however often it is asked about.
          const slots = new Map<string, number>()
          const targets: Array<PackageTarget> = []
          const asked: Array<{ readonly slot: number; readonly offset: number; readonly target: PackageTarget }> = []
          for (let n = 0; n < payload.queries.length; n++) {
            const target = yield* Effect.fromResult(resolveQuery(payload.queries[n]!, `queries[${n}]: `))
            const offset = yield* Effect.fromResult(pageOffset(payload.queries[n]!.page_token))
            const key = `${target.base}\u0000${target.name}`
            let slot = slots.get(key)
            if (slot === undefined) {
              slots.set(key, slot = targets.length)
              targets.push(target)
            }
            asked.push({ slot, offset, target })
          }
          const packages = yield* packagesOf(targets)
          // Each result's bytes as kept with its package's answer (the first page), copied into the body.
          const parts: Array<Uint8Array> = [BATCH_HEAD]
          for (let n = 0; n < asked.length; n++) {
            const { offset, slot, target } = asked[n]!
            if (n > 0) parts.push(COMMA)
            parts.push(batchResult(packages[slot]!, matchedOf(packages[slot]!, target), offset))
          }
          parts.push(BATCH_TAIL)
          grown(targets, packages)
          // Sent part by part, never joined: at a million records a batch answer is tens of megabytes, and
          // copying it into one buffer (and collecting that) took most of the batch's time.
          return HttpServerResponse.raw(Readable.from(parts), {
            contentType: JSON_TYPE,
            contentLength: parts.reduce((n, p) => n + p.byteLength, 0),
            headers: { etag: weakEtag(parts) }
          })
        }),

      osvRecord: ({ params, request }) => {
        const problem = identifierProblem(params.id)
        if (problem !== undefined) return Effect.fail(new BadRequest({ message: problem }))
        const id = normaliseIdentifier(params.id)
        if (id === undefined) {
          return Effect.fail(
            new BadRequest({ message: `malformed identifier ${JSON.stringify(params.id.slice(0, 100))}` })
          )
        }
        const key = `osv\u0000${id}`
        const build = Effect.flatMap(index.record(id), (osv) => {
          if (osv === undefined) {
            return Effect.fail(new NotFound({ message: `${id} has no OSV record in any data source` }))
          }
          const identity = encoder.encode(osv)
          return Effect.succeed({
            value: { etag: weakEtag(identity), identity } as VulnAnswer,
            bytes: identity.byteLength,
            dependsOn: [id]
          })
        })
        return Effect.map(
          cache.serve(key, build),
          (served) => vulnResponse(served.value, request, (bytes) => cache.grew(key, bytes))
        )
      },

      changes: ({ query }) =>
        Effect.gen(function*() {
          const since = query.since ?? "0"
          if (!CURSOR.test(since)) {
            return yield* new BadRequest({ message: "invalid since: pass a next_cursor from an earlier answer" })
          }
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
  })
)
