import { baseScoreV2, baseScoreV3, severityV2, severityV3 } from "./cvss.ts"
import { isRecord } from "./text.ts"

/** CVSS objects as CVE 5.1 takes them: only the members its CVSS schemas define (they forbid others). */

const COMMON_V3 = [
  "version",
  "vectorString",
  "attackVector",
  "attackComplexity",
  "privilegesRequired",
  "userInteraction",
  "scope",
  "confidentialityImpact",
  "integrityImpact",
  "availabilityImpact",
  "baseScore",
  "baseSeverity",
  "exploitCodeMaturity",
  "remediationLevel",
  "reportConfidence",
  "temporalScore",
  "temporalSeverity",
  "confidentialityRequirement",
  "integrityRequirement",
  "availabilityRequirement",
  "modifiedAttackVector",
  "modifiedAttackComplexity",
  "modifiedPrivilegesRequired",
  "modifiedUserInteraction",
  "modifiedScope",
  "modifiedConfidentialityImpact",
  "modifiedIntegrityImpact",
  "modifiedAvailabilityImpact",
  "environmentalScore",
  "environmentalSeverity"
]

const KEYS: Record<string, ReadonlyArray<string>> = {
  cvssV2_0: [
    "version",
    "vectorString",
    "accessVector",
    "accessComplexity",
    "authentication",
    "confidentialityImpact",
    "integrityImpact",
    "availabilityImpact",
    "baseScore",
    "exploitability",
    "remediationLevel",
    "reportConfidence",
    "temporalScore",
    "collateralDamagePotential",
    "targetDistribution",
    "confidentialityRequirement",
    "integrityRequirement",
    "availabilityRequirement",
    "environmentalScore"
  ],
  cvssV3_0: COMMON_V3,
  cvssV3_1: COMMON_V3,
  cvssV4_0: [
    "version",
    "vectorString",
    "baseScore",
    "baseSeverity",
    "attackVector",
    "attackComplexity",
    "attackRequirements",
    "privilegesRequired",
    "userInteraction",
    "vulnConfidentialityImpact",
    "vulnIntegrityImpact",
    "vulnAvailabilityImpact",
    "subConfidentialityImpact",
    "subIntegrityImpact",
    "subAvailabilityImpact",
    "exploitMaturity",
    "confidentialityRequirement",
    "integrityRequirement",
    "availabilityRequirement",
    "modifiedAttackVector",
    "modifiedAttackComplexity",
    "modifiedAttackRequirements",
    "modifiedPrivilegesRequired",
    "modifiedUserInteraction",
    "modifiedVulnConfidentialityImpact",
    "modifiedVulnIntegrityImpact",
    "modifiedVulnAvailabilityImpact",
    "modifiedSubConfidentialityImpact",
    "modifiedSubIntegrityImpact",
    "modifiedSubAvailabilityImpact",
    "Safety",
    "Automatable",
    "Recovery",
    "valueDensity",
    "vulnerabilityResponseEffort",
    "providerUrgency"
  ]
}

export type CvssKey = "cvssV2_0" | "cvssV3_0" | "cvssV3_1" | "cvssV4_0"

export const cvssKeyOf = (version: string): CvssKey | undefined =>
  version === "2.0" || version === "2" ?
    "cvssV2_0"
    : version === "3.0" ?
    "cvssV3_0"
    : version === "3.1" ?
    "cvssV3_1"
    : version === "4.0" || version === "4" ?
    "cvssV4_0"
    : undefined

/** `{ cvssV3_1: {...} }` from a CVSS data object, or undefined when required members are missing. */
export const cvssMetric = (data: Record<string, unknown>): Record<string, unknown> | undefined => {
  const key = cvssKeyOf(String(data.version))
  if (key === undefined || typeof data.vectorString !== "string" || typeof data.baseScore !== "number") return undefined
  const out: Record<string, unknown> = {}
  for (const k of KEYS[key]!) if (data[k] !== undefined && data[k] !== null) out[k] = data[k]
  out.version = key === "cvssV2_0" ? "2.0" : key === "cvssV4_0" ? "4.0" : String(data.version)
  if (key !== "cvssV2_0" && typeof out.baseSeverity !== "string") out.baseSeverity = severityV3(data.baseScore)
  return { format: "CVSS", [key]: out }
}

/** A metric from a bare vector string (OSV `severity`, EUVD `baseScoreVector`), scoring it when we can. */
export const metricFromVector = (
  vector: string,
  version: string | undefined,
  score?: number
): Record<string, unknown> | undefined => {
  const v = vector.trim()
  const ver = version ??
    (/^CVSS:3\.1\//.test(v)
      ? "3.1"
      : /^CVSS:3\.0\//.test(v)
      ? "3.0"
      : /^CVSS:4\.0\//.test(v)
      ? "4.0"
      : /AV:[LAN]\/AC:[HML]\/Au:/.test(v)
      ? "2.0"
      : undefined)
  const key = ver === undefined ? undefined : cvssKeyOf(ver)
  if (key === undefined) return undefined
  const computed = key === "cvssV2_0" ? baseScoreV2(v) : key === "cvssV4_0" ? undefined : baseScoreV3(v)
  const baseScore = score ?? computed
  if (baseScore === undefined) return { format: "CVSS", other: { type: `cvss_v${ver}`, content: { vectorString: v } } }
  return cvssMetric({
    version: ver,
    vectorString: v,
    baseScore,
    ...(key === "cvssV2_0" ? {} : { baseSeverity: severityV3(baseScore) })
  })
}

export const otherMetric = (type: string, content: unknown): Record<string, unknown> | undefined =>
  isRecord(content) && Object.keys(content).length > 0 ? { other: { type, content } } : undefined

export { severityV2 }
