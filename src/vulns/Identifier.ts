/**
 * Identifier forms of spec 1. Prefixes are case-insensitive and normalised to
 * upper case; `2021-44228` is `CVE-2021-44228`. Other ecosystem identifiers
 * (`<PREFIX>-<id>`) are accepted for `/vuln` and `/exploits` as given.
 */
const CVE = /^(?:cve-)?(\d{4})-(\d{4,19})$/i
const GHSA = /^ghsa-([23456789cfghjmpqrvwx]{4})-([23456789cfghjmpqrvwx]{4})-([23456789cfghjmpqrvwx]{4})$/i
const YEAR_NUMBER: Record<string, RegExp> = {
  PYSEC: /^pysec-(\d{4})-(\d{1,19})$/i,
  RUSTSEC: /^rustsec-(\d{4})-(\d{4,19})$/i,
  GO: /^go-(\d{4})-(\d{4,19})$/i,
  OSV: /^osv-(\d{4})-(\d{1,19})$/i,
  EUVD: /^euvd-(\d{4})-(\d{1,19})$/i
}
const KNOWN = /^(cve|ghsa|pysec|rustsec|go|osv|euvd)-/i
const OTHER = /^([A-Za-z][A-Za-z0-9]{1,15})-([A-Za-z0-9][A-Za-z0-9._:-]{0,120})$/

/** `CVE-<year>-<number>` for the CVE forms, else undefined. */
export const normaliseCve = (raw: string): string | undefined => {
  const m = CVE.exec(raw.trim())
  return m === null ? undefined : `CVE-${m[1]}-${m[2]}`
}

/** Any accepted identifier, normalised; undefined when malformed. */
export const normaliseIdentifier = (raw: string): string | undefined => {
  const value = raw.trim()
  if (value === "") return undefined
  const cve = normaliseCve(value)
  if (cve !== undefined) return cve
  const ghsa = GHSA.exec(value)
  if (ghsa !== null) {
    return `GHSA-${ghsa[1]}-${ghsa[2]}-${ghsa[3]}`.replace(/-(\w{4})/g, (_, s: string) => `-${s.toLowerCase()}`)
  }
  for (const [prefix, pattern] of Object.entries(YEAR_NUMBER)) {
    const m = pattern.exec(value)
    if (m !== null) return `${prefix}-${m[1]}-${m[2]}`
  }
  // A known prefix with a malformed rest is malformed, not "other".
  if (KNOWN.test(value)) return undefined
  const other = OTHER.exec(value)
  return other === null ? undefined : `${other[1]!.toUpperCase()}-${other[2]}`
}

export const MAX_IDENTIFIER_LENGTH = 100
const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * Why a path identifier is refused before any lookup (400), or undefined.
 * Checked in the handlers, so after authentication like any other input;
 * nothing refused here reaches a query or the usage log unescaped. No
 * identifier form has `;` or `%`; the API's routes pass both on literally
 * (`literalPath` in `RouteFallback.ts`) where the router would cut the path
 * at `;` or find no route for a malformed percent-encoding, so they end here.
 */
export const identifierProblem = (raw: string): string | undefined =>
  raw.length > MAX_IDENTIFIER_LENGTH
    ? `identifier longer than ${MAX_IDENTIFIER_LENGTH} characters`
    : CONTROL.test(raw) || !raw.isWellFormed()
    ? "malformed identifier: control characters are not allowed"
    : raw.includes(";")
    ? `malformed identifier: ";" is not allowed`
    : raw.includes("%")
    ? `malformed identifier: malformed percent-encoding ("%" is not allowed)`
    : undefined
