import { Clock, Effect, PubSub, Stream } from "effect"
import { type EpssEntry } from "./Epss.ts"
import { emptySummary, withContent } from "./ExploitSummary.ts"
import { ALIAS_HOPS, assemble, exploitKeys } from "./LookupAssembly.ts"
import type { ExploitRecord } from "./Normalised.ts"
import { type AliasRow, type EpssRow, type ExploitRow, type RecordRow, toRows } from "./StoreRows.ts"
import type {
  FailedItem,
  LookupOptions,
  NormalisedItem,
  PageRequest,
  PendingCursor,
  RawItem,
  RawResult,
  VulnStoreShape
} from "./VulnStoreShapes.ts"

interface RawState {
  readonly item: RawItem
  readonly normalisedHash: string | null
  readonly fetchedAt: Date
}

const key = (...parts: ReadonlyArray<string>) => parts.join("\u0000")
const originKey = (row: { readonly origin: { readonly source: string; readonly identifier: string } }) =>
  key(row.origin.source, row.origin.identifier)

/** The vulnerability store in memory: the SQL store's semantics on maps, for unit tests. */
export const makeMemoryVulnStore = Effect.gen(function*() {
  const changes = yield* PubSub.sliding<ReadonlyArray<string>>(1024)
  const publish = (ids: ReadonlyArray<string>) => ids.length === 0 ? Effect.void : PubSub.publish(changes, ids)
  const raw = new Map<string, RawState>()
  let records: Array<RecordRow & { enrichedAt: Date }> = []
  let aliases: Array<AliasRow> = []
  const epss = new Map<string, EpssRow>()
  let exploits: Array<ExploitRow> = []
  const failures = new Map<string, FailedItem>()

  const resolve = (identifier: string): ReadonlyArray<string> => {
    const seen = new Set([identifier])
    let frontier = [identifier]
    for (let hop = 0; hop < ALIAS_HOPS; hop++) {
      const next: Array<string> = []
      for (const id of frontier) {
        // A pair is one row; the graph is walked both ways, as on SQL.
        for (const a of aliases) {
          const other = a.identifier === id ? a.alias : a.alias === id ? a.identifier : undefined
          if (other !== undefined && !seen.has(other)) {
            seen.add(other)
            next.push(other)
          }
        }
      }
      frontier = next
    }
    return [...seen]
  }

  const lookup = Effect.fn("VulnStore.lookup")(function*(identifier: string, options?: LookupOptions) {
    const recordsOnly = options?.recordsOnly ?? false
    const bodies = recordsOnly || (options?.bodies ?? true)
    const ids = resolve(identifier)
    const wanted = new Set(ids)
    const best = new Map<string, RecordRow & { enrichedAt: Date }>()
    for (const r of records) {
      if (!wanted.has(r.identifier)) continue
      const k = key(r.source, r.identifier)
      const current = best.get(k)
      if (current === undefined || preferred(r, current)) best.set(k, r)
    }
    const rows = [...best.values()]
      .map((r) => ({
        source: r.source,
        identifier: r.identifier,
        body: bodies ? r.body : null,
        counts: r.counts,
        gcve: r.gcve,
        enrichedAt: r.enrichedAt,
        fetchedAt: raw.get(originKey(r))!.fetchedAt
      }))
    const produced = new Set(records.map(originKey))
    const processing = [...raw.values()]
      .filter((s) => wanted.has(s.item.identifier) && !produced.has(key(s.item.source, s.item.identifier)))
      .map((s) => ({ source: s.item.source, identifier: s.item.identifier, fetchedAt: s.fetchedAt }))
    const scores = new Map<string, EpssEntry>()
    for (const id of ids) {
      const e = epss.get(id)
      if (e !== undefined) {
        scores.set(id, {
          cve: e.cve,
          score: e.score,
          percentile: e.percentile,
          date: e.date,
          modelVersion: e.modelVersion
        })
      }
    }
    const found = assemble(identifier, ids, rows, processing, scores)
    return recordsOnly ? { aliases: [], records: found.records.filter((r) => !r.processing) } : found
  })

  const exploitsOf = Effect.fn("VulnStore.exploits")(function*(identifier: string, page: PageRequest) {
    const wanted = new Set(exploitKeys(identifier, resolve(identifier)))
    const byUuid = new Map<string, ExploitRow>()
    for (const e of exploits) {
      if (!wanted.has(e.cveId)) continue
      const current = byUuid.get(e.uuid)
      if (current === undefined || fuller(e, current)) byUuid.set(e.uuid, e)
    }
    const all = [...byUuid.values()].sort((a, b) =>
      (b.createdAt ?? -Infinity) - (a.createdAt ?? -Infinity) || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0)
    )
    const summary = emptySummary()
    for (const e of all) summary[e.summaryKey] += 1
    return {
      count: all.length,
      summary,
      exploits: all.slice(page.offset, page.offset + page.limit).map((row): ExploitRecord => {
        // The body may sit under another item of the same uuid than the row that won the collapse.
        const content = row.content ?? exploits.find((x) => x.uuid === row.uuid && x.content !== undefined)?.content
        const e = { ...row, content }
        return {
          uuid: e.uuid,
          cveId: e.cveId,
          source: e.source,
          type: e.type as ExploitRecord["type"],
          ...(e.url === null ? {} : { url: e.url }),
          ...(e.title === null ? {} : { title: e.title }),
          ...(e.createdAt === null ? {} : { createdAt: e.createdAt }),
          details: page.includeContent && e.content !== undefined
            ? withContent(e.details, e.summaryKey, e.content)
            : e.details
        }
      })
    }
  })

  const putRaw = Effect.fn("VulnStore.putRaw")(function*(items: ReadonlyArray<RawItem>) {
    const now = new Date(yield* Clock.currentTimeMillis)
    const results = items.map((item): RawResult => {
      const k = key(item.source, item.identifier)
      const current = raw.get(k)
      if (current !== undefined && current.item.hash === item.hash) {
        return { outcome: "unchanged", pending: current.normalisedHash !== item.hash }
      }
      raw.set(k, { item, normalisedHash: null, fetchedAt: now })
      return { outcome: current === undefined ? "inserted" : "updated", pending: true }
    })
    yield* publish(items.filter((_, n) => results[n]!.outcome !== "unchanged").map((i) => i.identifier))
    return results
  })

  const putNormalised = Effect.fn("VulnStore.putNormalised")(function*(
    normalised: ReadonlyArray<NormalisedItem>,
    failedItems: ReadonlyArray<FailedItem>
  ) {
    // As the SQL store: output of a raw version stored over since is skipped (SqlVulnWrites.ts).
    const current = (item: NormalisedItem | FailedItem) => {
      const stored = raw.get(key(item.source, item.identifier))
      return stored === undefined || stored.item.hash === item.hash
    }
    const done = normalised.filter(current)
    const failed = failedItems.filter(current)
    const rows = toRows(done)
    const replaced = new Set([...done, ...failed].map((r) => key(r.source, r.identifier)))
    const keep = <A extends { readonly origin: { readonly source: string; readonly identifier: string } }>(a: A) =>
      !replaced.has(originKey(a))
    const now = new Date(yield* Clock.currentTimeMillis)
    const recordKey = (r: RecordRow) => key(r.source, r.identifier, originKey(r))
    const fresh = new Set(rows.records.map(recordKey))
    records = [
      ...records.filter((r) => keep(r) && !fresh.has(recordKey(r))),
      ...rows.records.map((r) => ({ ...r, enrichedAt: now }))
    ]
    const aliasKeys = new Set(aliases.filter(keep).map((a) => key(a.identifier, a.alias, originKey(a))))
    aliases = [
      ...aliases.filter(keep),
      ...rows.aliases.filter((a) => !aliasKeys.has(key(a.identifier, a.alias, originKey(a))))
    ]
    for (const [cve, e] of epss) if (!keep(e)) epss.delete(cve)
    for (const e of rows.epss) epss.set(e.cve, e)
    const exploitKey = (e: ExploitRow) => key(e.uuid, originKey(e))
    const freshExploits = new Set(rows.exploits.map(exploitKey))
    exploits = [...exploits.filter((e) => keep(e) && !freshExploits.has(exploitKey(e))), ...rows.exploits]
    for (const f of failed) failures.set(key(f.source, f.identifier), { ...f, failedAt: now })
    for (const d of done) {
      const k = key(d.source, d.identifier)
      failures.delete(k)
      const state = raw.get(k)
      if (state !== undefined && state.item.hash === d.hash) raw.set(k, { ...state, normalisedHash: d.hash })
    }
    yield* publish([...rows.touched, ...failed.map((f) => f.identifier)])
    return done.length
  })

  const failed = Effect.fn("VulnStore.failed")(function*() {
    return [...failures.values()].sort((a, b) =>
      a.source.localeCompare(b.source) || a.identifier.localeCompare(b.identifier)
    )
  })

  const pendingRaw = Effect.fn("VulnStore.pendingRaw")(function*(after: PendingCursor | undefined, limit: number) {
    const cursor = after === undefined ? undefined : key(after.source, after.identifier)
    return [...raw.values()]
      .filter((s) =>
        s.normalisedHash !== s.item.hash &&
        failures.get(key(s.item.source, s.item.identifier))?.hash !== s.item.hash &&
        (cursor === undefined || key(s.item.source, s.item.identifier) > cursor)
      )
      .map((s) => s.item)
      .sort((a, b) => compareKeys(key(a.source, a.identifier), key(b.source, b.identifier)))
      .slice(0, limit)
  })

  return {
    lookup,
    exploits: exploitsOf,
    touched: Stream.fromPubSub(changes),
    putRaw,
    putNormalised,
    failed,
    pendingRaw,
    // Nothing is planned in memory.
    refreshStatistics: () => Effect.void
  } satisfies VulnStoreShape
})

/** Key order for `pendingRaw` (a walk needs one consistent order, not the SQL collation). */
const compareKeys = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Same order as the SQL store's `DISTINCT ON`: newest rank, then origin source descending. */
const preferred = (a: RecordRow, b: RecordRow) =>
  a.rank !== b.rank ? a.rank > b.rank : a.origin.source !== b.origin.source
    ? a.origin.source > b.origin.source
    : a.origin.identifier < b.origin.identifier

const fuller = (a: ExploitRow, b: ExploitRow) => {
  const la = JSON.stringify(a.details).length
  const lb = JSON.stringify(b.details).length
  return la !== lb ? la > lb : a.origin.source !== b.origin.source
    ? a.origin.source < b.origin.source
    : a.origin.identifier < b.origin.identifier
}
