import { euvdDate } from "../../../src/ingest/formats/euvd.ts"
import type { Route } from "./api.ts"
import { answerFault, jsonFiles, note, sendJson } from "./api.ts"

type Json = Record<string, unknown>

/** The recorded EUVD API items (per-id files and the `lastvulnerabilities` answer), one per id. */
export const euvdItems = (): Array<Json> => {
  const last = jsonFiles("data/corpus/euvd").flatMap((d) => Array.isArray(d) ? d as Array<Json> : [])
  const byId = new Map<string, Json>()
  for (const item of [...jsonFiles("data/sources/euvd"), ...last]) byId.set(String(item.id), item)
  return [...byId.values()]
}

const day = (s: string | null) => s === null ? undefined : Date.parse(`${s}T00:00:00Z`)

/**
 * `GET /euvd/api/search`: ENISA's search with `fromUpdatedDate`/`toUpdatedDate`
 * (days, both included), `page` from 0, `size` up to 100, newest update first, `{items, total}`.
 */
export const euvdRoute = (items: Array<Json>): Route => (ctx, req, res, url) => {
  if (url.pathname !== "/euvd/api/search") return false
  if (answerFault(ctx, req, res, url)) return true
  const q = url.searchParams
  const from = day(q.get("fromUpdatedDate")) ?? -Infinity
  const to = (day(q.get("toUpdatedDate")) ?? Infinity) + 86_400_000
  const updated = (i: Json) =>
    Date.parse(euvdDate(i.dateUpdated) ?? euvdDate(i.datePublished) ?? "1970-01-01T00:00:00Z")
  const chosen = items.filter((i) => updated(i) >= from && updated(i) < to).sort((a, b) => updated(b) - updated(a))
  const size = Math.min(100, Number(q.get("size") ?? 10))
  const page = Number(q.get("page") ?? 0)
  sendJson(res, 200, { items: chosen.slice(page * size, page * size + size), total: chosen.length })
  note(ctx, req, url, 200)
  return true
}
