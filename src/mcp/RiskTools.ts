import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { identifierProblem, normaliseIdentifier } from "../vulns/Identifier.ts"
import { recentKev } from "./RecentKev.ts"
import { epssOf, kevOf, ssvcOf } from "./RecordFacts.ts"
import type { ToolParams } from "./ToolDefinitions.ts"
import { fail, isCalendarDate, MAX_BATCH, nextCursorFor, pageRequest, result } from "./ToolKit.ts"
import { makeVulnLookups, type ToolHandlers } from "./VulnLookups.ts"

/** The vulnerability tools that weigh exploitation risk (`VulnTools.ts` holds the ones that read the records). */
export type RiskToolName =
  | "get_kev_status"
  | "get_epss"
  | "get_ssvc"
  | "risk_overview"
  | "batch_lookup"
  | "recent_kev_entries"

/** Exploitation risk: known-exploited status, EPSS, SSVC, one overview, many at once, and the KEV feed. */
export const riskToolHandlers = Effect.gen(function*() {
  const { cvssMax, known, store } = yield* makeVulnLookups
  const sql = yield* SqlClient.SqlClient

  const handlers: ToolHandlers<RiskToolName> = {
    get_kev_status: Effect.fn("McpTools.get_kev_status")(function*(p: ToolParams<"get_kev_status">) {
      const { id, lookup } = yield* known(p.identifier)
      const entries = kevOf(lookup.records)
      const listed = entries.length > 0
      return result(
        listed
          ? `${id} is KNOWN EXPLOITED: ${
            entries.map((e) =>
              `${e.source} added ${e.dateAdded ?? "?"}${e.dueDate === null ? "" : `, due ${e.dueDate}`}${
                e.knownRansomwareCampaignUse === null ? "" : `, ransomware: ${e.knownRansomwareCampaignUse}`
              }`
            ).join("; ")
          }`
          : `${id} is not in a known-exploited catalog`,
        { identifier: id, knownExploited: listed, entries }
      )
    }),

    get_epss: Effect.fn("McpTools.get_epss")(function*(p: ToolParams<"get_epss">) {
      const { id, lookup } = yield* known(p.identifier)
      const epss = epssOf(lookup.records)
      return result(
        epss === null
          ? `${id} has no EPSS score`
          : `${id} EPSS ${epss.score} (percentile ${epss.percentile}) as of ${epss.date}`,
        { identifier: id, epss }
      )
    }),

    get_ssvc: Effect.fn("McpTools.get_ssvc")(function*(p: ToolParams<"get_ssvc">) {
      const { id, lookup } = yield* known(p.identifier)
      const ssvc = ssvcOf(lookup.records)
      return result(
        ssvc.map((s) =>
          `- ${s.source}: ${
            s.options.map((o) => Object.entries(o).map(([k, v]) => `${k}=${String(v)}`).join(",")).join("; ")
          }`
        ).join("\n") || `${id} has no SSVC assessment`,
        { identifier: id, ssvc }
      )
    }),

    risk_overview: Effect.fn("McpTools.risk_overview")(function*(p: ToolParams<"risk_overview">) {
      const { id, lookup } = yield* known(p.identifier)
      const exploits = yield* store.exploits(id, { limit: 1, offset: 0, includeContent: false })
      const highest = cvssMax(lookup)
      const epss = epssOf(lookup.records)
      const kev = kevOf(lookup.records)
      const exploitation = ssvcOf(lookup.records).flatMap((s) =>
        s.options.flatMap((o) =>
          "Exploitation" in o ? [String(o.Exploitation)] : []
        )
      )[0] ?? null
      return result(
        `${id}: CVSS ${highest?.baseScore ?? "-"} ${highest?.baseSeverity ?? ""}; EPSS ${epss?.score ?? "-"}; ${
          kev.length > 0 ? "KNOWN EXPLOITED" : "not in KEV"
        }; SSVC exploitation ${exploitation ?? "-"}; ${exploits.count} public exploit(s)`,
        {
          identifier: id,
          highestCvss: highest,
          epss,
          knownExploited: kev.length > 0,
          kev,
          ssvcExploitation: exploitation,
          exploitCount: exploits.count,
          exploitsBySource: exploits.summary
        }
      )
    }),

    batch_lookup: Effect.fn("McpTools.batch_lookup")(function*(p: ToolParams<"batch_lookup">) {
      const raw = p.identifiers
      if (raw.length === 0 || raw.length > MAX_BATCH) {
        return yield* fail(
          "invalid_argument",
          `pass 1 to ${MAX_BATCH} identifiers; split larger lists into several calls`
        )
      }
      const rows = yield* Effect.forEach(raw, (one) =>
        Effect.gen(function*() {
          const input = one.slice(0, 100)
          const id = normaliseIdentifier(one)
          if (id === undefined || identifierProblem(one) !== undefined) {
            return { input, identifier: null, known: false, error: "malformed identifier" }
          }
          const lookup = yield* store.lookup(id)
          if (lookup.records.length === 0) {
            return { input, identifier: id, known: false, error: "unknown identifier" }
          }
          return {
            input,
            identifier: id,
            known: true,
            sources: [
              ...new Set(lookup.records.map((r) => r.source))
            ],
            highestCvss: cvssMax(lookup)?.baseScore ?? null,
            epss: epssOf(lookup.records)?.score ?? null,
            knownExploited: kevOf(lookup.records).length > 0
          }
        }), { concurrency: 4 })
      return result(
        rows.map((r) =>
          "sources" in r
            ? `- ${r.identifier}: CVSS ${r.highestCvss ?? "-"}, EPSS ${r.epss ?? "-"}${r.knownExploited ? ", KEV" : ""}`
            : `- ${r.input}: ${r.error}`
        ).join("\n"),
        { results: rows }
      )
    }),

    recent_kev_entries: Effect.fn("McpTools.recent_kev_entries")(function*(p: ToolParams<"recent_kev_entries">) {
      const req = yield* pageRequest(p.cursor, p.limit)
      const since = p.since === undefined || p.since === "" ? null : p.since
      if (since !== null && !isCalendarDate(since)) {
        return yield* fail("invalid_argument", "since must be a calendar date YYYY-MM-DD")
      }
      const { entries: items, total } = yield* recentKev({ since, offset: req.offset, size: req.size }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.catch(() => fail("unavailable", "the vulnerability store is unavailable; retry shortly"))
      )
      return result(
        `${total} known-exploited entr${total === 1 ? "y" : "ies"}${since === null ? "" : ` since ${since}`}\n${
          items.map((i) =>
            `- ${i.dateAdded} ${i.cve}${i.knownRansomwareCampaignUse === "Known" ? " (ransomware)" : ""}`
          ).join("\n")
        }`,
        { items, total, nextCursor: nextCursorFor(req.offset, req.size, total) }
      )
    })
  }
  return handlers
})
