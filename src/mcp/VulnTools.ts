import { Effect } from "effect"
import { buildSummary } from "../vulns/Summary.ts"
import { affectedOf, cvssOf, cweOf, descriptionsOf, kevOf, referencesOf, titleOf } from "./RecordFacts.ts"
import type { RiskToolName } from "./RiskTools.ts"
import type { ToolNameIn, ToolParams } from "./ToolDefinitions.ts"
import { fail, pageOf, pageRequest, result, truncate } from "./ToolKit.ts"
import { makeVulnLookups, type ToolHandlers } from "./VulnLookups.ts"

/** The vulnerability-record tools: lookups, facts read from the CVE 5.1 records and comparisons (risk: `RiskTools.ts`). */
export const vulnToolHandlers = Effect.gen(function*() {
  const { cvssMax, identify, known, store, unknown } = yield* makeVulnLookups

  const handlers: ToolHandlers<Exclude<ToolNameIn<"vulnerabilities">, RiskToolName>> = {
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
    })
  }
  return handlers
})
