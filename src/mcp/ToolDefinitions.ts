import { Schema } from "effect"
import { Cursor, DEFAULT_PAGE_SIZE, GuardrailText, MAX_BATCH, MaxChars, PageSize, wholeNumber } from "./ToolKit.ts"

/**
 * The MCP tools' names, descriptions and typed arguments: the one place
 * they are defined (the server, `bin/vdb mcp tools` and docs/mcp.md read them).
 */
const Identifier = Schema.String.annotate({
  description:
    "Any vulnerability identifier: CVE-2024-3094, GHSA-xxxx-xxxx-xxxx, PYSEC-…, RUSTSEC-…, GO-…, EUVD-…, OSV ids (case and surrounding spaces do not matter)"
})
const opt = Schema.optionalKey

const SourceName = Schema.String.annotate({
  description: "A data source: mitre, nist-nvd, vulncheck-nvd, vulncheck-kev, cisa-kev, ghsa, osv, euvd"
})

const identifierOnly = Schema.Struct({ identifier: Identifier })
const paged = Schema.Struct({ identifier: Identifier, cursor: opt(Cursor), limit: opt(PageSize) })
const listOnly = Schema.Struct({ cursor: opt(Cursor), limit: opt(PageSize) })
// Not `Tool.EmptyParams` (which refuses every key): like every tool with arguments, one without ignores unknown keys.
const noArguments = Schema.Record(Schema.String, Schema.Unknown)

type ToolParameters = Schema.Struct<Schema.Struct.Fields> | typeof noArguments

type Group = "vulnerabilities" | "exploits" | "account" | "gateway"

export interface ToolDefinition<
  Name extends string = string,
  Parameters extends ToolParameters = ToolParameters,
  G extends Group = Group
> {
  readonly name: Name
  readonly title: string
  readonly group: G
  readonly description: string
  /** A struct of the arguments; `noArguments` for a tool without any. */
  readonly parameters: Parameters
  /** Whether a call changes stored state (issuing nonces); every other tool only reads. */
  readonly writes: boolean
}

// Generic in the name and the schema, so each tool's decoded arguments have a type (ToolParams).
const tool = <const Name extends string, Parameters extends ToolParameters, const G extends Group>(
  name: Name,
  title: string,
  group: G,
  description: string,
  parameters: Parameters,
  writes = false
): ToolDefinition<Name, Parameters, G> => ({ name, title, group, description, parameters, writes })

export const TOOL_DEFINITIONS = [
  // Vulnerability records
  tool(
    "lookup_vulnerability",
    "Look up a vulnerability",
    "vulnerabilities",
    "Find every source record for an identifier (any form, aliases followed): per source, the identifier it publishes under, its title and whether it is still processing.",
    identifierOnly
  ),
  tool(
    "get_source_record",
    "One source's record",
    "vulnerabilities",
    "The full CVE 5.1 record one source holds for an identifier, as JSON text (long records are cut with a marker; page with `offset`).",
    Schema.Struct({
      identifier: Identifier,
      source: SourceName,
      offset: opt(wholeNumber("offset", "Character offset to start at", { min: 0, default: 0 })),
      max_chars: opt(MaxChars)
    })
  ),
  tool(
    "get_summary",
    "Vulnerability summary",
    "vulnerabilities",
    "The /v1/info summary: which sources know the identifier, aliases, counts of references, problem types, metrics, affected entries, and links to each source.",
    identifierOnly
  ),
  tool(
    "get_aliases",
    "Aliases",
    "vulnerabilities",
    "Every identifier linked to this one through the alias graph (CVE, GHSA, OSV, EUVD, ...), and which source published each record.",
    identifierOnly
  ),
  tool(
    "get_description",
    "Description",
    "vulnerabilities",
    "The vulnerability's descriptions, one per source (long texts cut with a marker).",
    Schema.Struct({ identifier: Identifier, max_chars: opt(MaxChars) })
  ),
  tool(
    "get_kev_status",
    "Known exploited (KEV)",
    "vulnerabilities",
    "Whether the vulnerability is in a known-exploited catalog (CISA KEV, VulnCheck KEV): date added, due date, required action, ransomware use.",
    identifierOnly
  ),
  tool(
    "get_epss",
    "EPSS",
    "vulnerabilities",
    "FIRST's EPSS exploit-prediction score and percentile, with its date and model version.",
    identifierOnly
  ),
  tool(
    "get_cvss",
    "CVSS scores",
    "vulnerabilities",
    "Every CVSS score (v2.0 to v4.0) each source gives: base score, severity, vector.",
    identifierOnly
  ),
  tool(
    "get_ssvc",
    "SSVC decision points",
    "vulnerabilities",
    "CISA's SSVC decision points (exploitation, automatable, technical impact) from the vulnerability enrichment.",
    identifierOnly
  ),
  tool(
    "get_cwe",
    "Weaknesses (CWE)",
    "vulnerabilities",
    "The problem types (CWE ids and descriptions), with the sources that assign each.",
    identifierOnly
  ),
  tool(
    "list_affected_products",
    "Affected products",
    "vulnerabilities",
    `Affected vendors, products and version ranges, per source. Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    paged
  ),
  tool(
    "list_references",
    "References",
    "vulnerabilities",
    `Reference URLs (advisories, patches, exploits) with their tags and the sources citing them. Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    paged
  ),
  tool(
    "compare_sources",
    "Compare sources",
    "vulnerabilities",
    "Where the sources disagree: CVSS scores and severities, CWE assignments, KEV listing and affected products, per source.",
    identifierOnly
  ),
  tool(
    "batch_lookup",
    "Batch lookup",
    "vulnerabilities",
    `Look up to ${MAX_BATCH} identifiers at once: for each, whether it is known, its sources, highest CVSS, EPSS and KEV listing.`,
    Schema.Struct({ identifiers: Schema.Array(Identifier).annotate({ description: `1 to ${MAX_BATCH} identifiers` }) })
  ),
  tool(
    "risk_overview",
    "Risk overview",
    "vulnerabilities",
    "One-call triage view: highest CVSS, EPSS, KEV status, SSVC exploitation, and exploit counts per source.",
    identifierOnly
  ),
  tool(
    "recent_kev_entries",
    "Recently added KEV entries",
    "vulnerabilities",
    `Vulnerabilities most recently added to a known-exploited catalog, newest first. Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    Schema.Struct({
      since: opt(
        Schema.String.annotate({ description: "Only entries added on or after this calendar date (YYYY-MM-DD)" })
      ),
      cursor: opt(Cursor),
      limit: opt(PageSize)
    })
  ),
  // Exploits
  tool(
    "list_exploits",
    "Exploits",
    "exploits",
    `Public exploits, proof-of-concepts and sightings for a vulnerability, newest first, with a count per source. Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    paged
  ),
  tool(
    "get_exploit_summary",
    "Exploit counts",
    "exploits",
    "How many exploits each source (Exploit-DB, Metasploit, nuclei, GitHub PoCs, VulnCheck XDB, ...) lists for a vulnerability.",
    identifierOnly
  ),
  tool(
    "get_exploit",
    "Exploit detail",
    "exploits",
    "One exploit's per-source detail by its uuid (from list_exploits), optionally with its raw content (cut with a marker).",
    Schema.Struct({
      identifier: Identifier,
      uuid: Schema.String.annotate({ description: "The exploit's uuid from list_exploits" }),
      include_content: opt(Schema.Boolean.annotate({ description: "Include the raw exploit body (default false)" })),
      max_chars: opt(MaxChars)
    })
  ),
  tool(
    "list_exploitdb_entries",
    "Exploit-DB entries",
    "exploits",
    `Exploit-DB entries for a vulnerability, with Exploit-DB's own detail (id, platform, author, ...). Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    paged
  ),
  tool(
    "list_metasploit_modules",
    "Metasploit modules",
    "exploits",
    `Metasploit modules for a vulnerability, with the module detail Metasploit publishes. Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    paged
  ),
  tool(
    "list_nuclei_templates",
    "Nuclei templates",
    "exploits",
    `Nuclei detection templates for a vulnerability, with their severity, authors and references. Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    paged
  ),
  tool(
    "list_pocs",
    "Proof-of-concepts",
    "exploits",
    `Proof-of-concept repositories and write-ups (GitHub, VulnCheck XDB, Vulnerability Lab, ...). Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    paged
  ),
  // Account
  tool(
    "get_organization",
    "Organization",
    "account",
    "The calling organization: name, whether it is active, its per-minute and per-week request limits.",
    noArguments
  ),
  tool(
    "get_rate_limit_status",
    "Rate-limit status",
    "account",
    "The calling organization's current rate-limit windows (limit, used, remaining, reset). The call itself counts as one request, like every MCP request.",
    noArguments
  ),
  tool(
    "get_usage",
    "Usage",
    "account",
    "The calling organization's requests per route and status since a date (default: the last 7 days).",
    Schema.Struct({
      since: opt(
        Schema.String.annotate({ description: "ISO 8601 date or time in the years 1970 to 9999 (default 7 days ago)" })
      )
    })
  ),
  // Gateway
  tool(
    "list_guardrails",
    "Guardrail rules",
    "gateway",
    `The organization's AI-gateway guardrail rules (type, action, priority, enabled). Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    listOnly
  ),
  tool(
    "list_policies",
    "Gateway policies",
    "gateway",
    `The organization's AI-gateway policy entries (allow/deny by provider, model, tool, MCP server, skill, client). Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    listOnly
  ),
  tool(
    "check_guardrails",
    "Test text against guardrails",
    "gateway",
    "Dry run: the decision the organization's guardrails would take on a text (allow, redact, block), the rules that matched and how many redactions. Changes nothing; the text is not logged.",
    Schema.Struct({ text: GuardrailText })
  ),
  tool(
    "issue_nonces",
    "Issue nonces",
    "gateway",
    "Issue single-use nonces for sealing trusted blocks in gateway requests (delimiter integrity).",
    Schema.Struct({ count: opt(wholeNumber("count", "How many nonces", { min: 1, max: 100, default: 1 })) }),
    true
  ),
  tool(
    "list_inference_log",
    "Inference log",
    "gateway",
    `Metadata of the organization's recent gateway requests (provider, model, surface, status, latency, sizes, decision; never prompts or completions), newest first. Pages of ${DEFAULT_PAGE_SIZE} by default.`,
    listOnly
  )
] as const

/** One of the tools' definitions, each with its own name and argument schema. */
export type VdbToolDefinition = typeof TOOL_DEFINITIONS[number]
export type ToolName = VdbToolDefinition["name"]
/** A tool's arguments as its schema decodes them. */
export type ToolParams<N extends ToolName> = Extract<VdbToolDefinition, { readonly name: N }>["parameters"]["Type"]
/** The names of one group's tools (each group's handlers live in their own module). */
export type ToolNameIn<G extends Group> = Extract<VdbToolDefinition, { readonly group: G }>["name"]
