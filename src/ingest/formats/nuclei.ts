import type { ExploitRecord } from "../../vulns/Normalised.ts"
import type { ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { canonicalId, CVE_ID, exploitUuid } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { asArray, asString, isRecord } from "./text.ts"

/**
 * Nuclei: `cves.json` entries (NDJSON lines, or an array of them) and templates (YAML).
 * Both name the template id, the native id of the exploit record, so a template and
 * its index line give the same uuid.
 */

const TEMPLATE_ROOT =
  /(?:^|\/)((?:http|network|dns|file|headless|ssl|javascript|code|cloud|dast|tcp|cves|vulnerabilities)\/.+\.ya?ml)$/

/** A repository-relative template path (the older index carries absolute CI paths). */
export const templatePath = (path: string): string | undefined => TEMPLATE_ROOT.exec(path.trim())?.[1]

const isIndexEntry = (x: unknown): x is Record<string, unknown> =>
  isRecord(x) && typeof x.ID === "string" && "file_path" in x
const isTemplate = (x: unknown): x is Record<string, unknown> =>
  isRecord(x) && typeof x.id === "string" && isRecord(x.info)

export function* items(doc: unknown, ctx: DocContext): Iterable<Read> {
  if (Array.isArray(doc)) {
    for (const [i, e] of doc.entries()) yield* one(e, { ...ctx, position: `${ctx.position}#${i}` })
    return
  }
  yield* one(doc, ctx)
}

function* one(doc: unknown, ctx: DocContext): Iterable<Read> {
  if (isIndexEntry(doc)) {
    const path = templatePath(String(doc.file_path))
    if (path === undefined) return yield problem(ctx.position, `${doc.ID}: file_path is not a template path`)
    return yield itemOf(ctx, path, doc)
  }
  if (isTemplate(doc)) return yield itemOf(ctx, `template:${doc.id}`, doc, { keepText: true })
  yield problem(ctx.position, "neither a nuclei cves.json entry (ID, file_path) nor a template (id, info)")
}

const templateUrls = (path: string) => ({
  path,
  templateUrl: `https://github.com/projectdiscovery/nuclei-templates/blob/main/${path}`,
  rawUrl: `https://raw.githubusercontent.com/projectdiscovery/nuclei-templates/main/${path}`
})

/** Top-level template keys naming a protocol, with the nuclei-templates folder of that protocol's CVE templates. */
const PROTOCOL_FOLDERS: Readonly<Record<string, string>> = {
  http: "http",
  requests: "http",
  network: "network",
  tcp: "network",
  javascript: "javascript"
}
const OTHER_PROTOCOLS = ["dns", "file", "headless", "ssl", "code", "websocket", "whois"]

/**
 * Where nuclei-templates keeps a CVE template: `<protocol>/cves/<year>/<id>.yaml`, the `file_path`
 * of all 3,105 entries of its `cves.json` (http, network and javascript). A template read from
 * anywhere else (a per-CVE copy, the store at re-normalisation) gets its path by that rule, so its
 * row has the URL its index line gives; one the rule does not settle (an id that is not a CVE,
 * several or other protocols, a DAST template with `fuzzing`) gets none rather than a guess.
 */
const conventionalPath = (t: Record<string, unknown>): string | undefined => {
  const id = String(t.id)
  if (!CVE_ID.test(id) || OTHER_PROTOCOLS.some((key) => key in t)) return undefined
  const folders = new Set(
    Object.keys(t).flatMap((key) => Object.hasOwn(PROTOCOL_FOLDERS, key) ? [PROTOCOL_FOLDERS[key]!] : [])
  )
  const fuzzing = asArray(t.http).some((request) => isRecord(request) && "fuzzing" in request)
  if (folders.size !== 1 || fuzzing) return undefined
  return `${[...folders][0]}/cves/${id.slice(4, 8)}/${id}.yaml`
}

const cvesOfTemplate = (t: Record<string, unknown>): Array<string> => {
  const info = isRecord(t.info) ? t.info : {}
  const cls = isRecord(info.classification) ? info.classification : {}
  const listed = Array.isArray(cls["cve-id"]) ? cls["cve-id"] : String(cls["cve-id"] ?? "").split(",")
  const all = [...listed.map((c) => canonicalId(String(c))), canonicalId(String(t.id))]
  return [...new Set(all.filter((c) => CVE_ID.test(c)))]
}

export const normalise = (item: UpstreamItem): ReadonlyArray<Normalised> | ItemProblem => {
  const p = item.parsed
  if (isIndexEntry(p)) {
    const info = isRecord(p.Info) ? p.Info : {}
    const cve = canonicalId(String(p.ID))
    if (!CVE_ID.test(cve)) return []
    const exploit: ExploitRecord = {
      uuid: exploitUuid("nuclei", String(p.ID), cve),
      cveId: cve,
      source: "nuclei",
      url: templateUrls(item.identifier).templateUrl,
      type: "exploit",
      ...(asString(info.Name) ? { title: info.Name as string } : {}),
      details: {
        nuclei: { ...templateUrls(item.identifier), ...(asString(info.Severity) ? { severity: info.Severity } : {}) }
      }
    }
    return [{ kind: "exploits", summaryKey: "nuclei", exploits: [exploit] }]
  }
  if (isTemplate(p)) {
    const info = isRecord(p.info) ? p.info : {}
    // Read from a nuclei-templates checkout, the file's own path is the template's; elsewhere the folder
    // convention gives it. The row then holds everything its index line does, and the store (which keeps
    // the fuller of two rows of one uuid, this one) serves it with its URL and its YAML.
    const path = templatePath(item.position.replace(/[#:][0-9]+$/, "")) ?? conventionalPath(p)
    const exploits = cvesOfTemplate(p).map((cve): ExploitRecord & { raw: string } => ({
      uuid: exploitUuid("nuclei", String(p.id), cve),
      cveId: cve,
      source: "nuclei",
      type: "exploit",
      ...(asString(info.name) ? { title: info.name as string } : {}),
      ...(path !== undefined ? { url: templateUrls(path).templateUrl } : {}),
      details: {
        nuclei: {
          ...(path !== undefined ? templateUrls(path) : {}),
          ...(asString(info.severity) ? { severity: info.severity } : {}),
          ...(asString(info.author) ? { author: info.author } : {}),
          references: asArray(info.reference).map(String)
        }
      },
      raw: item.raw
    }))
    return exploits.length > 0 ? [{ kind: "exploits", summaryKey: "nuclei", exploits }] : []
  }
  return problem(item.position, "nuclei item is neither an index entry nor a template")
}
