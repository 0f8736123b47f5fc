import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { identifierProblem, normaliseIdentifier } from "../vulns/Identifier.ts"
import { buildSummary } from "../vulns/Summary.ts"
import { recentKev } from "./RecentKev.ts"
import {
  affectedOf,
  cvssOf,
  cweOf,
  descriptionsOf,
  epssOf,
  kevOf,
  referencesOf,
  ssvcOf,
  titleOf
} from "./RecordFacts.ts"
import type { ToolNameIn, ToolParams } from "./ToolDefinitions.ts"
import { fail, isCalendarDate, MAX_BATCH, nextCursorFor, pageOf, pageRequest, result, truncate } from "./ToolKit.ts"
import { makeVulnLookups, type ToolHandlers } from "./VulnLookups.ts"

/** The vulnerability-record tools: lookups, facts read from the CVE 5.1 records, comparisons and the KEV feed. */
export const vulnToolHandlers = Effect.gen(function*() {
  const { cvssMax, identify, known, store, unknown } = yield* makeVulnLookups
  const sql = yield* SqlClient.SqlClient

  const handlers: ToolHandlers<ToolNameIn<"vulnerabilities">> = {
    lookup_vulnerability: Effect.fn("McpTools.lookup_vulnerability")(function*(p: ToolParams<"lookup_vulnerability">) {
      const { id, lookup } = yield* known(p.identifier)
      const records = lookup.records.map((r) => ({
        source: r.source,
        identifier: r.identifier,
        title: titleOf(r.record),
        processing: r.processing,
        fetchedAt: r.fetchedAt.toISOString()
      }))
      const lines = records.map((r) =>
        `- ${r.source}: ${r.identifier}${r.processing ? " (processing)" : ""}${r.title === null ? "" : ` — ${r.title}`}`
      )
      return result(
        `${id}: ${records.length} source record(s); aliases: ${lookup.aliases.join(", ") || "none"}\n${
          lines.join("\n")
        }`,
        {
          identifier: id,
          aliases: lookup.aliases,
          records
        }
      )
    }),

    get_source_record: Effect.fn("McpTools.get_source_record")(function*(p: ToolParams<"get_source_record">) {
      const { id, lookup } = yield* known(p.identifier)
      const record = lookup.records.find((r) => r.source === p.source)
      if (record === undefined) {
        return yield* fail(
          "unknown_identifier",
          `no ${String(p.source).slice(0, 40)} record for ${id}; sources that have one: ${
            lookup.records.map((r) => r.source).join(", ")
          }`
        )
      }
      const json = record.recordJson ?? "null"
      const offset: number = p.offset ?? 0
      const cut = truncate(json.slice(offset), p.max_chars, (limit) => `call again with offset=${offset + limit}`)
      return result(cut.text, {
        identifier: id,
        source: record.source,
        recordIdentifier: record.identifier,
        offset,
        totalChars: json.length,
        truncated: cut.truncated,
        json: cut.text
      })
    }),

    get_summary: Effect.fn("McpTools.get_summary")(function*(p: ToolParams<"get_summary">) {
      const id = yield* identify(p.identifier)
      const summary = buildSummary(id, yield* store.lookup(id, { bodies: false }))
      if (summary === undefined) return yield* unknown(id)
      return result(
        `${id}: sources ${
          summary.sources.map((s) => s.name).join(", ")
        }; ${summary.references} references, ${summary.metrics} metrics, ${summary.affected} affected entries; aliases: ${
          summary.aliases.join(", ") || "none"
        }`,
        summary
      )
    }),

    get_aliases: Effect.fn("McpTools.get_aliases")(function*(p: ToolParams<"get_aliases">) {
      const { id, lookup } = yield* known(p.identifier)
      const published = [...new Set(lookup.records.map((r) => `${r.source}:${r.identifier}`))]
      return result(`${id} aliases: ${lookup.aliases.join(", ") || "none"}`, {
        identifier: id,
        aliases: lookup.aliases,
        publishedAs: published
      })
    }),

    get_description: Effect.fn("McpTools.get_description")(function*(p: ToolParams<"get_description">) {
      const { id, lookup } = yield* known(p.identifier)
      const descriptions = descriptionsOf(lookup.records).map((d) => {
        const cut = truncate(d.value, p.max_chars, "raise max_chars")
        return { ...d, value: cut.text, truncated: cut.truncated }
      })
      return result(
        descriptions.map((d) => `[${d.source}] ${d.value}`).join("\n\n") || `${id} has no description yet`,
        { identifier: id, descriptions }
      )
    }),

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

    get_cvss: Effect.fn("McpTools.get_cvss")(function*(p: ToolParams<"get_cvss">) {
      const { id, lookup } = yield* known(p.identifier)
      const scores = cvssOf(lookup.records)
      return result(
        scores.map((s) =>
          `- ${s.source} CVSS ${s.version}: ${s.baseScore ?? "?"} ${s.baseSeverity ?? ""} ${s.vectorString ?? ""}`
            .trimEnd()
        ).join("\n") || `${id} has no CVSS score`,
        { identifier: id, scores, highest: cvssMax(lookup) }
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

    get_cwe: Effect.fn("McpTools.get_cwe")(function*(p: ToolParams<"get_cwe">) {
      const { id, lookup } = yield* known(p.identifier)
      const cwe = cweOf(lookup.records)
      return result(
        cwe.map((c) => `- ${c.cweId ?? "(no id)"} ${c.description} [${c.sources.join(", ")}]`).join("\n") ||
          `${id} has no problem type`,
        { identifier: id, problemTypes: cwe }
      )
    }),

    list_affected_products: Effect.fn("McpTools.list_affected_products")(
      function*(p: ToolParams<"list_affected_products">) {
        const req = yield* pageRequest(p.cursor, p.limit)
        const { id, lookup } = yield* known(p.identifier)
        const page = pageOf(affectedOf(lookup.records), req)
        const lines = page.items.map((a) =>
          `- [${a.source}] ${a.vendor ?? "?"} ${a.product ?? "?"}: ${
            a.versions.map((v) =>
              `${v.version ?? ""}${v.lessThan === null ? "" : ` <${v.lessThan}`}${
                v.lessThanOrEqual === null ? "" : ` <=${v.lessThanOrEqual}`
              } ${v.status ?? ""}`.trim()
            ).join("; ")
          }`
        )
        return result(
          `${page.total} affected entries for ${id}${page.nextCursor === null ? "" : " (more: pass nextCursor)"}\n${
            lines.join("\n")
          }`,
          { identifier: id, ...page }
        )
      }
    ),

    list_references: Effect.fn("McpTools.list_references")(function*(p: ToolParams<"list_references">) {
      const req = yield* pageRequest(p.cursor, p.limit)
      const { id, lookup } = yield* known(p.identifier)
      const page = pageOf(referencesOf(lookup.records), req)
      return result(
        `${page.total} references for ${id}${page.nextCursor === null ? "" : " (more: pass nextCursor)"}\n${
          page.items.map((r) => `- ${r.url}${r.tags.length === 0 ? "" : ` [${r.tags.join(", ")}]`}`).join("\n")
        }`,
        { identifier: id, ...page }
      )
    }),

    compare_sources: Effect.fn("McpTools.compare_sources")(function*(p: ToolParams<"compare_sources">) {
      const { id, lookup } = yield* known(p.identifier)
      const sources = [...new Set(lookup.records.map((r) => r.source))]
      const cvss = cvssOf(lookup.records)
      const cwe = cweOf(lookup.records)
      const kev = kevOf(lookup.records)
      const affected = affectedOf(lookup.records)
      const perSourceView = sources.map((source) => ({
        source,
        cvss: cvss.filter((s) => s.source === source).map((s) => ({
          version: s.version,
          baseScore: s.baseScore,
          baseSeverity: s.baseSeverity
        })),
        cwe: cwe.filter((c) => c.sources.includes(source)).map((c) => c.cweId ?? c.description),
        kev: kev.some((k) => k.source === source),
        affectedProducts: [
          ...new Set(affected.filter((a) => a.source === source).map((a) => `${a.vendor ?? "?"}/${a.product ?? "?"}`))
        ]
      }))
      const disagreements: Array<string> = []
      const severities = new Set(cvss.map((s) => s.baseSeverity?.toUpperCase()).filter((s) => s !== undefined))
      if (severities.size > 1) disagreements.push(`CVSS severity differs: ${[...severities].join(" vs ")}`)
      const byVersion = new Map<string, Set<number | null>>()
      for (const s of cvss) byVersion.set(s.version, (byVersion.get(s.version) ?? new Set()).add(s.baseScore))
      for (const [version, values] of byVersion) {
        if (values.size > 1) disagreements.push(`CVSS ${version} base scores differ: ${[...values].join(" vs ")}`)
      }
      const cweSets = new Set(perSourceView.filter((s) => s.cwe.length > 0).map((s) => s.cwe.slice().sort().join(",")))
      if (cweSets.size > 1) disagreements.push(`CWE assignments differ: ${[...cweSets].join(" vs ")}`)
      return result(
        `${id}: ${sources.length} source(s); ${
          disagreements.length === 0 ? "no disagreement found" : disagreements.join("; ")
        }`,
        { identifier: id, disagreements, sources: perSourceView }
      )
    }),

    batch_lookup: Effect.fn("McpTools.batch_lookup")(function*(p: ToolParams<"batch_lookup">) {
      const raw: ReadonlyArray<unknown> = Array.isArray(p.identifiers) ? p.identifiers : []
      if (raw.length === 0 || raw.length > MAX_BATCH) {
        return yield* fail(
          "invalid_argument",
          `pass 1 to ${MAX_BATCH} identifiers; split larger lists into several calls`
        )
      }
      const rows = yield* Effect.forEach(raw, (one) =>
        Effect.gen(function*() {
          const id = normaliseIdentifier(typeof one === "string" ? one : "")
          if (id === undefined || identifierProblem(String(one)) !== undefined) {
            return { input: String(one).slice(0, 100), identifier: null, known: false, error: "malformed identifier" }
          }
          const lookup = yield* store.lookup(id)
          if (lookup.records.length === 0) {
            return { input: String(one).slice(0, 100), identifier: id, known: false, error: "unknown identifier" }
          }
          return {
            input: String(one).slice(0, 100),
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

    recent_kev_entries: Effect.fn("McpTools.recent_kev_entries")(function*(p: ToolParams<"recent_kev_entries">) {
      const req = yield* pageRequest(p.cursor, p.limit)
      const since = typeof p.since === "string" && p.since !== "" ? p.since : null
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
