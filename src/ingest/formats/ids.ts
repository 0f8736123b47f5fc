import { createHash } from "node:crypto"
import { VDB_ADP_ORG_ID } from "../../vulns/EnrichmentContainer.ts"

export const CVE_ID = /^CVE-[0-9]{4}-[0-9]{4,19}$/
/** Identifier kinds other than CVE that become records (see docs/sources.md, "the relaxation"). */
export const NON_CVE_RECORD_ID =
  /^(GHSA(-[23456789cfghjmpqrvwx]{4}){3}|PYSEC-[0-9]{4}-[0-9]+|RUSTSEC-[0-9]{4}-[0-9]{4}|GO-[0-9]{4}-[0-9]{4,}|EUVD-[0-9]{4}-[0-9]+|[A-Z][A-Z0-9]*(-[A-Za-z0-9.:_]+)+)$/
const CVE_LOOSE = /^(?:CVE-)?([0-9]{4})-([0-9]{4,19})$/i

export const isCveId = (id: string): boolean => CVE_ID.test(id)

/**
 * `cveMetadata.cveId` of a source record: the CVE it is filed under, else the
 * CVE it aliases (the first in order when it names several, so the choice is
 * stable; a query by another of them is answered with that one, see
 * src/vulns/RecordMerge.ts), else its native id: the one case the CVE schema
 * refuses (docs/sources.md, "Record identifiers").
 */
export const recordCveId = (id: string, aliases: ReadonlyArray<string>): string =>
  isCveId(id) ? id : aliases.filter(isCveId).sort()[0] ?? id

/** `x_aliases` of a source record: every identifier it is known by except its `cveId` (so a native id moved out of `cveId` stays named). */
export const recordAliases = (id: string, cveId: string, aliases: ReadonlyArray<string>): Array<string> =>
  [...new Set([id, ...aliases])].filter((a) => a !== cveId).sort()

/** `cve-2021-44228` and `2021-44228` to `CVE-2021-44228`; anything else is returned trimmed. */
export const canonicalId = (id: string): string => {
  const trimmed = id.trim()
  const m = CVE_LOOSE.exec(trimmed)
  return m ? `CVE-${m[1]}-${m[2]}` : trimmed
}

/** The vdb namespace for name-based UUIDs (itself a v5 UUID of "urn:vendor:vdb" under the URL namespace). */
const VDB_NAMESPACE = "6ba7b811-9dad-11d1-80b4-00c04fd430c8"

const bytesOf = (uuid: string): Buffer => Buffer.from(uuid.replaceAll("-", ""), "hex")

const format = (b: Buffer): string => {
  const h = b.subarray(0, 16).toString("hex")
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`
}

/** RFC 4122 §4.3 name-based UUID, version 5 (SHA-1). */
export const uuidV5 = (name: string, namespace: string = VDB_NAMESPACE): string => {
  const hash = createHash("sha1").update(bytesOf(namespace)).update(name, "utf8").digest()
  hash[6] = (hash[6]! & 0x0f) | 0x50
  hash[8] = (hash[8]! & 0x3f) | 0x80
  return format(hash)
}

/**
 * A deterministic UUID shaped as version 4, for schema fields that demand one
 * (`orgId`, `assignerOrgId`): the CVE schema's `uuidType` only accepts version 4.
 */
export const uuidV4Shaped = (name: string): string => {
  const hash = createHash("sha256").update("vdb:org:").update(name, "utf8").digest()
  hash[6] = (hash[6]! & 0x0f) | 0x40
  hash[8] = (hash[8]! & 0x3f) | 0x80
  return format(hash)
}

/** Stable exploit uuid: source + native id (+ CVE when one native item covers several CVEs). */
export const exploitUuid = (source: string, nativeId: string, cveId: string): string =>
  uuidV5(`exploit:${source}:${nativeId}:${cveId}`)

/** Real CVE Program organisation ids where the data carries them; derived ones otherwise. */
export const ORG = {
  mitre: { orgId: "8254265b-2729-46b6-b9e3-3dfca2d5bfca", shortName: "mitre" },
  cisaAdp: { orgId: "134c704f-9b21-4f2e-91b3-4a467353bcc0", shortName: "CISA-ADP" },
  github: { orgId: "a0819718-46f1-4df5-94e2-005712e83aaa", shortName: "GitHub_M" },
  nvd: { orgId: uuidV4Shaped("nist-nvd"), shortName: "nvd" },
  cisaKev: { orgId: uuidV4Shaped("cisa-kev"), shortName: "CISA-KEV" },
  vulncheck: { orgId: uuidV4Shaped("vulncheck"), shortName: "VulnCheck" },
  enisa: { orgId: uuidV4Shaped("euvd"), shortName: "ENISA-EUVD" },
  osv: { orgId: uuidV4Shaped("osv"), shortName: "OSV" },
  vdb: { orgId: VDB_ADP_ORG_ID, shortName: "vdb" }
} as const

/**
 * Providers by OSV prefix, remembered: a handful of databases publish every advisory, and hashing
 * the same prefix again for each one showed in the normalising worker's profile. Prefixes come
 * from the data, so only the first few hundred are kept.
 */
const osvProviders = new Map<string, { readonly orgId: string; readonly shortName: string }>()

/** OSV database prefix to the provider that publishes it. */
export const osvProvider = (id: string): { readonly orgId: string; readonly shortName: string } => {
  const prefix = id.split("-")[0] ?? "OSV"
  if (prefix === "GHSA") return ORG.github
  const known = osvProviders.get(prefix)
  if (known !== undefined) return known
  const provider = { orgId: uuidV4Shaped(`osv:${prefix}`), shortName: prefix.length >= 2 ? prefix.slice(0, 32) : "OSV" }
  if (osvProviders.size < 512) osvProviders.set(prefix, provider)
  return provider
}

/** The web page of an identifier at its source, used when a record carries no reference at all. */
export const sourcePage = (source: string, id: string): string => {
  switch (source) {
    case "nist-nvd":
    case "vulncheck-nvd":
      return `https://nvd.nist.gov/vuln/detail/${id}`
    case "cisa-kev":
    case "vulncheck-kev":
      return `https://www.cisa.gov/known-exploited-vulnerabilities-catalog?search_api_fulltext=${id}`
    case "euvd":
      return `https://euvd.enisa.europa.eu/vulnerability/${id}`
    case "ghsa":
      return `https://github.com/advisories/${id}`
    case "osv":
      return id.startsWith("GO-") ? `https://pkg.go.dev/vuln/${id}` : `https://osv.dev/vulnerability/${id}`
    default:
      return `https://www.cve.org/CVERecord?id=${id}`
  }
}

const GHSA_IN_URL =
  /^https?:\/\/github\.com\/(?:advisories|[^/]+\/[^/]+\/security\/advisories)\/(GHSA(?:-[23456789cfghjmpqrvwx]{4}){3})\/?$/i

/** A CVE record's reference that *is* a GitHub advisory page names that advisory as an alias. */
export const ghsaOfReference = (url: string): string | undefined => {
  const m = GHSA_IN_URL.exec(url.trim())
  return m ? `GHSA-${m[1]!.slice(5).toLowerCase()}` : undefined
}
