import type { SourceName } from "../../../schema/Source.ts"
import type { IngestSource, KnownExploited } from "../Upstream.ts"
export { isOurs, withEpss } from "../../vulns/EnrichmentContainer.ts"
import { ORG } from "./ids.ts"
import { distinct } from "./text.ts"

/** Bumped when normalisation output changes, so stored records show which mapping produced them. */
export const GENERATOR_VERSION = "vdb-ingest/1.1.0"

export interface KevMetricInput {
  readonly cve: string
  readonly dateAdded: string
  readonly knownRansomwareCampaignUse?: string | undefined
  readonly dueDate?: string | undefined
  readonly requiredAction?: string | undefined
}

/** The CISA vulnrichment `kev` metric (schemas/vulnrichment-kev-metrics-schema-1.0.json), plus KEV's ransomware flag. */
export const kevMetric = (k: KevMetricInput): Record<string, unknown> => ({
  other: {
    type: "kev",
    content: {
      dateAdded: k.dateAdded,
      reference: `https://www.cisa.gov/known-exploited-vulnerabilities-catalog?search_api_fulltext=${k.cve}`,
      ...(k.knownRansomwareCampaignUse !== undefined
        ? { knownRansomwareCampaignUse: k.knownRansomwareCampaignUse }
        : {}),
      ...(k.dueDate !== undefined ? { dueDate: k.dueDate } : {}),
      ...(k.requiredAction !== undefined ? { requiredAction: k.requiredAction } : {})
    }
  }
})

export const knownExploitedOf = (k: KevMetricInput): KnownExploited => ({
  cve: k.cve,
  dateAdded: k.dateAdded,
  knownRansomwareCampaignUse: k.knownRansomwareCampaignUse ?? "Unknown"
})

export interface EnrichmentInput {
  readonly source: SourceName
  readonly upstream: IngestSource
  /** Where the data was read from (upstream project / API), e.g. `NVD CVE API 2.0`. */
  readonly enrichmentSource: string
  /** The data's own time (record update, catalog date): never the clock, so re-ingest is byte-identical. */
  readonly generatedAt: string | undefined
  readonly aliases: ReadonlyArray<string>
  readonly dataCollected: ReadonlyArray<string>
  readonly kev?: KevMetricInput | undefined
  readonly epss?: Record<string, unknown> | undefined
  /** Further `x_` members (EUVD `x_exploitedSince`, KEV `x_dueDate`, ...). */
  readonly extra?: Record<string, unknown>
}

/** The one `containers.adp` entry this service adds per source record. */
export const enrichmentContainer = (e: EnrichmentInput): Record<string, unknown> => ({
  providerMetadata: { orgId: ORG.vdb.orgId, shortName: ORG.vdb.shortName },
  title: `vdb enrichment from ${e.upstream}`,
  ...(e.kev !== undefined ? { metrics: [kevMetric(e.kev)] } : {}),
  x_generatorVersion: GENERATOR_VERSION,
  ...(e.generatedAt !== undefined ? { x_generatedAt: e.generatedAt } : {}),
  x_enrichmentSource: e.enrichmentSource,
  x_dataSource: e.source,
  x_dataCollected: distinct([...e.dataCollected, ...(e.kev ? ["knownExploited"] : []), ...(e.epss ? ["epss"] : [])]),
  ...(e.epss !== undefined ? { x_epss: e.epss } : {}),
  x_aliases: distinct(e.aliases),
  ...e.extra
})
