import { Schema } from "effect"
import { prompt, type PromptDefinition } from "./PromptDefinition.ts"
import { GuardrailText, MAX_BATCH } from "./ToolKit.ts"

/**
 * The MCP prompts: names, descriptions and typed arguments (MCP prompt
 * arguments are strings), plus the tool calls whose results ground each
 * prompt's message and the instruction that follows them. The server,
 * `bin/vdb mcp prompts` and docs/mcp.md all read this list.
 */
const Identifier = Schema.String.annotate({ description: "A vulnerability identifier (CVE, GHSA, OSV, EUVD, ...)" })
const listOf = (value: string) => value.split(",").map((s) => s.trim()).filter((s) => s !== "")
// Refused while the arguments are decoded, so a longer list is the prompt's invalid-params
// error (a failure of the prompt's content would reach the client as an internal error).
const Identifiers = Schema.String.check(
  Schema.makeFilter<string>((value) =>
    listOf(value).length <= MAX_BATCH ||
    `pass at most ${MAX_BATCH} identifiers; split larger lists into several prompts`
  )
).annotate({
  description: `Comma-separated vulnerability identifiers (at most ${MAX_BATCH}; a longer list is refused)`
})
const opt = Schema.optionalKey

/** A free-text argument with usual values, which `completion/complete` offers. */
const suggested = (description: string, values: ReadonlyArray<string>) => ({
  values,
  schema: opt(
    Schema.String.annotate({ description: `${description} (${values.join(", ")}; completion/complete suggests these)` })
  )
})
const Audience = suggested("Optional: who reads it", ["board", "CISO", "customers"])
const MissionImpact = suggested("Optional: mission and well-being impact for us", ["low", "medium", "high"])
const Focus = suggested("Optional: a concern to focus on", ["PII", "secrets", "prompt injection"])

const audience = (args: { readonly audience?: string }) =>
  args.audience === undefined ? "" : ` The audience is: ${args.audience}.`

export const PROMPT_DEFINITIONS: ReadonlyArray<PromptDefinition> = [
  prompt({
    name: "triage_vulnerability",
    title: "Triage a vulnerability",
    description:
      "Triage one vulnerability: severity, exploitation evidence, affected products and a recommended priority.",
    parameters: {
      identifier: Identifier,
      environment: opt(Schema.String.annotate({ description: "Optional: what you run (products, versions, exposure)" }))
    },
    grounding: (
      a
    ) => [["risk_overview", { identifier: a.identifier }], ["get_description", {
      identifier: a.identifier,
      max_chars: 1500
    }], ["list_affected_products", { identifier: a.identifier, limit: 10 }]],
    instruction: (a) =>
      `Triage ${a.identifier} from the data above: state severity, whether it is exploited or exploitable, who is affected, and a priority (P1 to P4) with a one-line justification.${
        a.environment === undefined ? "" : ` Our environment: ${a.environment}.`
      }`
  }),
  prompt({
    name: "explain_exploitability",
    title: "Explain exploitability",
    description: "Explain how exploitable a vulnerability is, from KEV, EPSS, SSVC and public exploits.",
    parameters: { identifier: Identifier },
    grounding: (
      a
    ) => [["get_kev_status", { identifier: a.identifier }], ["get_epss", { identifier: a.identifier }], ["get_ssvc", {
      identifier: a.identifier
    }], ["get_exploit_summary", { identifier: a.identifier }]],
    instruction: (a) =>
      `Explain, for an engineer, how exploitable ${a.identifier} is in practice. Separate evidence of exploitation in the wild from exploit availability and from prediction (EPSS).`
  }),
  prompt({
    name: "prioritise_patches",
    title: "Prioritise patches",
    description: "Rank a list of vulnerabilities for patching, using CVSS, EPSS and KEV.",
    parameters: { identifiers: Identifiers },
    grounding: (a) => [["batch_lookup", { identifiers: listOf(a.identifiers) }]],
    instruction: () =>
      "Rank these vulnerabilities for patching, most urgent first. Known exploited first, then by EPSS and CVSS; flag unknown identifiers. Give one line of reasoning each."
  }),
  prompt({
    name: "draft_advisory",
    title: "Draft a security advisory",
    description:
      "Draft a security advisory for a vulnerability: summary, impact, affected versions, remediation, references.",
    parameters: {
      identifier: Identifier,
      product: opt(Schema.String.annotate({ description: "Optional: the product the advisory is for" }))
    },
    grounding: (
      a
    ) => [
      ["get_description", { identifier: a.identifier, max_chars: 2000 }],
      ["get_cvss", { identifier: a.identifier }],
      ["get_cwe", { identifier: a.identifier }],
      ["list_affected_products", { identifier: a.identifier, limit: 20 }],
      ["list_references", { identifier: a.identifier, limit: 15 }]
    ],
    instruction: (a) =>
      `Draft a security advisory for ${a.identifier}${
        a.product === undefined ? "" : ` as it affects ${a.product}`
      } with sections: Summary, Impact, Affected versions, Remediation, References. Use only facts from the data above.`
  }),
  prompt({
    name: "executive_summary",
    title: "Executive summary",
    description: "A short non-technical summary of a vulnerability's business risk.",
    parameters: { identifier: Identifier, audience: Audience.schema },
    suggestions: { audience: Audience.values },
    grounding: (
      a
    ) => [["risk_overview", { identifier: a.identifier }], ["get_description", {
      identifier: a.identifier,
      max_chars: 1000
    }]],
    instruction: (a) =>
      `Write a five-sentence executive summary of ${a.identifier}: what it is, how likely it is to be exploited, what it could cost, and what we should do.${
        audience(a)
      }`
  }),
  prompt({
    name: "detection_guidance",
    title: "Detection guidance",
    description:
      "How to detect exploitation attempts of a vulnerability, using nuclei templates, Metasploit modules and references.",
    parameters: { identifier: Identifier },
    grounding: (
      a
    ) => [
      ["list_nuclei_templates", { identifier: a.identifier, limit: 10 }],
      ["list_metasploit_modules", { identifier: a.identifier, limit: 10 }],
      ["get_cwe", { identifier: a.identifier }],
      ["list_references", { identifier: a.identifier, limit: 10 }]
    ],
    instruction: (a) =>
      `Propose detection guidance for ${a.identifier}: what to look for in logs and traffic, which existing templates or modules to test with, and which signals are false-positive prone.`
  }),
  prompt({
    name: "remediation_plan",
    title: "Remediation plan",
    description: "A step-by-step remediation plan: fixed versions, workarounds, verification.",
    parameters: {
      identifier: Identifier,
      deadline: opt(Schema.String.annotate({ description: "Optional: a deadline to plan for (e.g. a KEV due date)" }))
    },
    grounding: (
      a
    ) => [["list_affected_products", { identifier: a.identifier, limit: 20 }], ["list_references", {
      identifier: a.identifier,
      limit: 20
    }], ["get_kev_status", { identifier: a.identifier }]],
    instruction: (a) =>
      `Write a remediation plan for ${a.identifier}: which versions fix it, interim mitigations, how to verify, and owners for each step.${
        a.deadline === undefined ? "" : ` Deadline: ${a.deadline}.`
      }`
  }),
  prompt({
    name: "ssvc_decision",
    title: "SSVC decision",
    description: "Walk CISA's SSVC decision tree (Track, Track*, Attend, Act) for a vulnerability.",
    parameters: { identifier: Identifier, mission_impact: MissionImpact.schema },
    suggestions: { mission_impact: MissionImpact.values },
    grounding: (
      a
    ) => [["get_ssvc", { identifier: a.identifier }], ["get_kev_status", { identifier: a.identifier }], [
      "get_exploit_summary",
      { identifier: a.identifier }
    ]],
    instruction: (a) =>
      `Walk the CISA SSVC decision tree for ${a.identifier} (exploitation, automatable, technical impact${
        a.mission_impact === undefined ? ", mission impact: ask me if needed" : `, mission impact: ${a.mission_impact}`
      }) and state the decision: Track, Track*, Attend or Act.`
  }),
  prompt({
    name: "review_source_disagreement",
    title: "Review source disagreement",
    description: "Review where the data sources disagree about a vulnerability and which to trust.",
    parameters: { identifier: Identifier },
    grounding: (a) => [["compare_sources", { identifier: a.identifier }], ["get_cvss", { identifier: a.identifier }]],
    instruction: (a) =>
      `Review where the sources disagree about ${a.identifier}. For each disagreement, say which source is more likely right and why, and what to record in our tracker.`
  }),
  prompt({
    name: "review_guardrails",
    title: "Review guardrails",
    description: "Review the organization's AI-gateway guardrail rules and policies for gaps and conflicts.",
    parameters: { focus: Focus.schema },
    suggestions: { focus: Focus.values },
    grounding: () => [["list_guardrails", { limit: 100 }], ["list_policies", { limit: 100 }]],
    instruction: (a) =>
      `Review these guardrail rules and gateway policies: find gaps, overlapping or conflicting rules, disabled or non-compiling rules, and propose changes.${
        a.focus === undefined ? "" : ` Focus on: ${a.focus}.`
      }`
  }),
  prompt({
    name: "test_guardrail_text",
    title: "Test a text against guardrails",
    description: "Dry-run a text against the guardrails and explain the decision.",
    parameters: { text: GuardrailText },
    grounding: (a) => [["check_guardrails", { text: a.text }], ["list_guardrails", { limit: 100 }]],
    instruction: () =>
      "Explain the guardrail decision above: which rules fired and why, and whether the outcome is what the organization likely intends."
  }),
  prompt({
    name: "compare_vulnerabilities",
    title: "Compare vulnerabilities",
    description: "Compare several vulnerabilities side by side.",
    parameters: { identifiers: Identifiers },
    grounding: (a) => [["batch_lookup", { identifiers: listOf(a.identifiers) }]],
    instruction: () =>
      "Compare these vulnerabilities in a table (identifier, highest CVSS, EPSS, known exploited) and say which matters most and why."
  }),
  prompt({
    name: "kev_briefing",
    title: "KEV briefing",
    description: "A briefing on vulnerabilities recently added to known-exploited catalogs.",
    parameters: {
      since: opt(
        Schema.String.annotate({ description: "Optional: only entries added on or after this date (YYYY-MM-DD)" })
      )
    },
    grounding: (a) => [["recent_kev_entries", { ...(a.since === undefined ? {} : { since: a.since }), limit: 25 }]],
    instruction: () =>
      "Write a briefing on these recently added known-exploited vulnerabilities: group them, call out ransomware use, and list what to check first."
  }),
  prompt({
    name: "exploit_maturity",
    title: "Exploit maturity",
    description: "Assess the maturity of public exploits for a vulnerability (PoC, weaponised, in the wild).",
    parameters: { identifier: Identifier },
    grounding: (
      a
    ) => [["list_exploits", { identifier: a.identifier, limit: 25 }], ["get_kev_status", { identifier: a.identifier }]],
    instruction: (a) =>
      `Assess the exploit maturity of ${a.identifier}: unproven, proof-of-concept, functional, weaponised (Metasploit, nuclei) or exploited in the wild. Cite the entries.`
  }),
  prompt({
    name: "affected_inventory_check",
    title: "Check an inventory",
    description: "Check whether a product and version you run is affected.",
    parameters: {
      identifier: Identifier,
      product: Schema.String.annotate({ description: "The product you run" }),
      version: Schema.String.annotate({ description: "The version you run" })
    },
    grounding: (a) => [["list_affected_products", { identifier: a.identifier, limit: 100 }]],
    instruction: (a) =>
      `Is ${a.product} ${a.version} affected by ${a.identifier}? Compare against the version ranges above; say affected, not affected, or unknown, and why.`
  }),
  prompt({
    name: "cwe_explainer",
    title: "Explain the weakness",
    description: "Explain the weakness class (CWE) behind a vulnerability and how to prevent it in code.",
    parameters: { identifier: Identifier },
    grounding: (
      a
    ) => [["get_cwe", { identifier: a.identifier }], ["get_description", {
      identifier: a.identifier,
      max_chars: 1500
    }]],
    instruction: (a) =>
      `Explain the weakness behind ${a.identifier} for developers: the CWE, how the bug arises, and coding practices and tests that prevent it.`
  }),
  prompt({
    name: "alias_resolution",
    title: "Resolve aliases",
    description: "Resolve an identifier to its aliases across ecosystems and explain which record to use.",
    parameters: { identifier: Identifier },
    grounding: (
      a
    ) => [["get_aliases", { identifier: a.identifier }], ["lookup_vulnerability", { identifier: a.identifier }]],
    instruction: (a) =>
      `List the identifiers ${a.identifier} is known under, which ecosystem each belongs to, and which one to use as the canonical reference.`
  }),
  prompt({
    name: "gateway_usage_review",
    title: "Review gateway and API usage",
    description: "Review the organization's API usage, rate limits and recent AI-gateway traffic.",
    parameters: {},
    grounding:
      () => [["get_organization", {}], ["get_rate_limit_status", {}], ["get_usage", {}], ["list_inference_log", {
        limit: 50
      }]],
    instruction: () =>
      "Review our usage: are we close to our limits, which routes dominate, any gateway errors or blocked requests, and what to change."
  })
]
