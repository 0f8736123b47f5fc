import { asArray, asString, isRecord } from "./text.ts"

/** NVD CPE applicability configurations to CVE 5.1 `affected` products. */

const CPE23 =
  /^cpe:2\.3:[aho*-](:(((\?*|\*?)([a-zA-Z0-9\-._]|(\\[\\*?!"#$%&'()+,/:;<=>@[\]^`{|}~]))+(\?*|\*?))|[*-])){5}(:(([a-zA-Z]{2,3}(-([a-zA-Z]{2}|[0-9]{3}))?)|[*-]))(:(((\?*|\*?)([a-zA-Z0-9\-._]|(\\[\\*?!"#$%&'()+,/:;<=>@[\]^`{|}~]))+(\?*|\*?))|[*-])){4}$/

/** Splits a CPE 2.3 formatted string on unescaped colons. */
const cpeParts = (cpe: string): Array<string> => {
  const parts: Array<string> = []
  let cur = ""
  for (let i = 0; i < cpe.length; i++) {
    const ch = cpe[i]!
    if (ch === "\\" && i + 1 < cpe.length) {
      cur += ch + cpe[i + 1]
      i++
    } else if (ch === ":") {
      parts.push(cur)
      cur = ""
    } else cur += ch
  }
  parts.push(cur)
  return parts
}

const unescape = (s: string): string => s.replace(/\\(.)/g, "$1")

const cpeMatches = (node: unknown): Array<Record<string, unknown>> => {
  if (!isRecord(node)) return []
  const own = asArray(node.cpeMatch).filter(isRecord)
  const children = asArray(node.children).flatMap(cpeMatches)
  return [...own, ...children]
}

/** One product per vulnerable CPE match, with its version range (NVD ranges are custom-typed: CPE versions). */
export const affectedFromConfigurations = (configurations: unknown): Array<Record<string, unknown>> => {
  const out = new Map<string, Record<string, unknown>>()
  for (const conf of asArray(configurations)) {
    for (const node of isRecord(conf) ? asArray(conf.nodes) : []) {
      if (isRecord(node) && node.negate === true) continue
      for (const m of cpeMatches(node)) {
        if (m.vulnerable !== true) continue
        const criteria = asString(m.criteria)
        if (criteria === undefined) continue
        const parts = cpeParts(criteria)
        const vendor = unescape(parts[3] ?? "")
        const product = unescape(parts[4] ?? "")
        if (vendor === "" || product === "" || vendor === "*" || product === "*") continue
        const cpeVersion = parts[5] ?? "*"
        const startIn = asString(m.versionStartIncluding)
        const startEx = asString(m.versionStartExcluding)
        const endEx = asString(m.versionEndExcluding)
        const endIn = asString(m.versionEndIncluding)
        const versions: Array<Record<string, unknown>> = []
        if (startEx !== undefined) versions.push({ version: startEx, status: "unaffected" })
        if (endEx !== undefined || endIn !== undefined) {
          versions.push({
            version: startIn ?? startEx ?? "0",
            status: "affected",
            versionType: "custom",
            ...(endEx !== undefined ? { lessThan: endEx } : { lessThanOrEqual: endIn })
          })
        } else if (startIn !== undefined || startEx !== undefined) {
          versions.push({
            version: startIn ?? startEx,
            status: "affected",
            versionType: "custom",
            lessThanOrEqual: "*"
          })
        } else if (cpeVersion !== "*" && cpeVersion !== "-") {
          versions.push({ version: unescape(cpeVersion), status: "affected" })
        }
        const product0: Record<string, unknown> = {
          vendor,
          product,
          ...(CPE23.test(criteria) ? { cpes: [criteria] } : {}),
          ...(versions.length > 0 ? { versions, defaultStatus: "unaffected" } : { defaultStatus: "affected" })
        }
        const key = JSON.stringify(product0)
        if (!out.has(key)) out.set(key, product0)
      }
    }
  }
  return [...out.values()]
}
