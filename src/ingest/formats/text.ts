/** Value-level sanitising shared by the record builders: what the CVE 5.1 schema accepts. */
export { asArray, distinct, isRecord } from "../../vulns/JsonShapes.ts"

const TIMESTAMP =
  /^((19|2[0-9])[0-9]{2})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?$/

/**
 * An ISO 8601 timestamp the schema accepts (years 1900–2999), or undefined.
 * Placeholder dates (Go vulndb's `0001-01-01T00:00:00Z`) and unparsable text give undefined.
 */
export const timestamp = (value: unknown): string | undefined => {
  if (typeof value !== "string") return undefined
  const v = value.trim()
  const m = TIMESTAMP.exec(v)
  if (m !== null) {
    const [y, mo, d] = [Number(m[1]), Number(m[3]), Number(m[4])]
    // A real calendar day: Date.UTC rolls Feb 30 over to March, so compare back.
    const day = new Date(Date.UTC(y, mo - 1, d))
    return day.getUTCFullYear() === y && day.getUTCMonth() === mo - 1 && day.getUTCDate() === d ? v : undefined
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(v)) return timestamp(`${v}T00:00:00Z`)
  return undefined
}

/** `YYYY-MM-DD` of a valid date string, or undefined. */
export const dateOnly = (value: unknown): string | undefined => {
  if (typeof value !== "string") return undefined
  const m = /^(\d{4}-\d{2}-\d{2})/.exec(value.trim())
  return m && timestamp(`${m[1]}T00:00:00Z`) ? m[1] : undefined
}

/** Unix seconds of an ISO date/time (UTC when no zone is given), or undefined. */
export const unixSeconds = (value: unknown): number | undefined => {
  const ts = timestamp(value)
  if (ts === undefined) return undefined
  const t = new Date(/(Z|[+-][0-9]{2}:[0-9]{2})$/.test(ts) ? ts : `${ts}Z`).getTime()
  return Number.isNaN(t) ? undefined : Math.floor(t / 1000)
}

const URI_SAFE = /[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%]/
const URI_SHAPE = /^[a-z][a-z0-9+\-.]*:(\/\/)?[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%]+$/i
/** Only characters RFC 3986 allows, at most one `#`: text `escapedUri` returns as it is (with no stray `%`). */
const URI_PLAIN = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*(#[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*)?$/
const STRAY_PERCENT = /%(?![0-9a-f]{2})/i

/**
 * A URL as the schema's `uri` format (RFC 3986) accepts it: characters outside
 * RFC 3986 are percent-encoded (UTF-8), stray `%` and a second `#` escaped.
 * Text that is not a URL at all (no scheme, whitespace inside) gives undefined.
 */
export const uri = (value: unknown): string | undefined => {
  if (typeof value !== "string") return undefined
  const v = value.trim()
  if (v.length === 0 || /\s/.test(v) || !/^[a-z][a-z0-9+\-.]*:/i.test(v)) return undefined
  // Nearly every reference is already a valid URI: then the escaping below returns it unchanged,
  // and the per-character walk was the largest part of normalising an advisory's references.
  const out = URI_PLAIN.test(v) && !STRAY_PERCENT.test(v) ? v : escapedUri(v)
  return URI_SHAPE.test(out) && out.length <= 2048 ? out : undefined
}

/** Percent-encodes what RFC 3986 does not allow (UTF-8), a stray `%` and a second `#`. */
export const escapedUri = (v: string): string => {
  let out = ""
  let seenHash = false
  for (let i = 0; i < v.length; i++) {
    const ch = v[i]!
    if (ch === "%" && !/^[0-9a-f]{2}$/i.test(v.slice(i + 1, i + 3))) out += "%25"
    else if (ch === "#" && seenHash) out += "%23"
    else if (URI_SAFE.test(ch)) out += ch
    else {
      const cp = v.codePointAt(i)!
      if (cp > 0xffff) i++
      out += encodeURIComponent(String.fromCodePoint(cp))
    }
    if (ch === "#") seenHash = true
  }
  return out
}

/** Text cut to `max` characters on a code-point boundary, or undefined when empty. */
export const text = (value: unknown, max: number): string | undefined => {
  if (typeof value !== "string") return undefined
  const v = value.trim()
  if (v.length === 0) return undefined
  if (v.length <= max) return v
  const points = Array.from(v)
  if (points.length <= max) return v
  return `${points.slice(0, max - 1).join("")}…`
}

export const asString = (x: unknown): string | undefined =>
  typeof x === "string" && x.trim() !== "" ? x.trim() : undefined
