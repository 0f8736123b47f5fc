import type { ExploitRecord } from "../../vulns/Normalised.ts"
import type { ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { canonicalId, CVE_ID, exploitUuid } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { asArray, asString, isRecord, unixSeconds } from "./text.ts"

/**
 * Metasploit: vulsio/msfdb-list per-CVE module lists (a file `<CVE>.json`, or
 * NDJSON `{cve, modules}` lines), and `modules_metadata_base.json` (object keyed by module).
 */

const cveFromFileName = (fileName: string): string | undefined => {
  const m = /(CVE-\d{4}-\d{4,19})(?:\.[a-z]+)*$/i.exec(fileName.split("/").pop() ?? "")
  return m ? canonicalId(m[1]!) : undefined
}

export function* items(doc: unknown, ctx: DocContext): Iterable<Read> {
  if (Array.isArray(doc)) {
    const cve = cveFromFileName(ctx.fileName)
    if (cve === undefined) return yield problem(ctx.position, "msfdb-list module list whose file name names no CVE")
    // Canonical shape shared with the NDJSON lines, so both give the same raw bytes.
    return yield itemOf(ctx, cve, { cve, modules: doc })
  }
  if (isRecord(doc) && typeof doc.cve === "string" && Array.isArray(doc.modules)) {
    const cve = canonicalId(doc.cve)
    if (!CVE_ID.test(cve)) return yield problem(ctx.position, `invalid CVE id ${JSON.stringify(doc.cve)}`)
    return yield itemOf(ctx, cve, { cve, modules: doc.modules })
  }
  if (isRecord(doc)) {
    let i = 0
    for (const [key, m] of Object.entries(doc)) {
      if (!isRecord(m)) yield problem(`${ctx.position}#${i}`, `module ${key} is not an object`)
      else yield itemOf(ctx, asString(m.fullname) ?? key, { ...m, fullname: asString(m.fullname) ?? key }, { index: i })
      i++
    }
    return
  }
  yield problem(ctx.position, "not a Metasploit module list")
}

const MODULE_FILE = /(?:^|\/)(modules\/.+\.rb)$/

/** A module's path inside a metasploit-framework checkout (`…/modules/exploits/…/x.rb`), else undefined. */
export const modulePathOf = (fileName: string): string | undefined =>
  MODULE_FILE.exec(fileName.replaceAll("\\", "/"))?.[1]

/**
 * A module file read from a checkout of metasploit-framework: the module's own
 * Ruby text is the exploit's raw body (`moduleContent`). The item is the compact
 * JSON `{modulePath, text}` like every other item (its hash covers the text).
 */
export const moduleFileItem = (ctx: DocContext, text: string): Read => {
  const modulePath = modulePathOf(ctx.fileName)
  if (modulePath === undefined) return problem(ctx.position, "not a Metasploit module file (modules/….rb)")
  return itemOf(ctx, modulePath, { modulePath, text })
}

/** `['CVE', '2021-44228']` in a module's `References`. */
const MODULE_CVE = /\[\s*['"]CVE['"]\s*,\s*['"](\d{4}-\d{4,19})['"]\s*\]/g
const MODULE_NAME = /['"]Name['"]\s*=>\s*(['"])(.+?)\1\s*,/

const fromModuleFile = (modulePath: string, text: string): Array<ExploitRecord & { raw: string }> => {
  const cves = [...new Set([...text.matchAll(MODULE_CVE)].map((m) => `CVE-${m[1]}`))]
  const nativeId = modulePath.replace(/^modules\//, "").replace(/\.rb$/, "")
  const title = MODULE_NAME.exec(text)?.[2]
  return cves.map((cve) => ({
    // The uuid of the same module from msfdb-list and the metadata file, so the rows meet.
    uuid: exploitUuid("metasploit", nativeId, cve),
    cveId: cve,
    source: "metasploit",
    url: `https://github.com/rapid7/metasploit-framework/blob/master/${modulePath}`,
    type: "exploit",
    title: title ?? modulePath.split("/").pop()!,
    details: { metasploit: { ...metasploitObject(modulePath), name: modulePath.split("/").pop() } },
    raw: text
  }))
}

const GITHUB_MODULE = /github\.com\/rapid7\/metasploit-framework\/blob\/[^/]+\/(modules\/.+\.rb)$/

const metasploitObject = (modulePath: string | undefined) =>
  modulePath === undefined ? {} : {
    modulePath,
    moduleUrl: `https://github.com/rapid7/metasploit-framework/blob/master/${modulePath}`,
    rawUrl: `https://raw.githubusercontent.com/rapid7/metasploit-framework/master/${modulePath}`
  }

export const normalise = (item: UpstreamItem): ReadonlyArray<Normalised> | ItemProblem => {
  const p = item.parsed
  if (!isRecord(p)) return problem(item.position, "Metasploit item is not an object")
  if (typeof p.modulePath === "string" && typeof p.text === "string") {
    const fromFile = fromModuleFile(p.modulePath, p.text)
    return fromFile.length > 0 ? [{ kind: "exploits", summaryKey: "metasploit", exploits: fromFile }] : []
  }
  // Module lists and metadata describe modules; the module's own text comes only from a checkout (`moduleFile`).
  const exploits: Array<ExploitRecord> = []
  if (typeof p.cve === "string" && Array.isArray(p.modules)) {
    for (const [i, m] of p.modules.entries()) {
      if (!isRecord(m) || typeof m.Name !== "string") return problem(`${item.position}#${i}`, "module without Name")
      const fromRef = asArray(m.References).map((r) => GITHUB_MODULE.exec(String(r))?.[1]).find((x) => x !== undefined)
      // Several modules share a file name across platforms (trans2open.rb): the path, else name + title, is the native id.
      const nativeId = fromRef?.replace(/^modules\//, "").replace(/\.rb$/, "") ?? `${m.Name}|${String(m.Title ?? "")}`
      exploits.push({
        uuid: exploitUuid("metasploit", nativeId, p.cve),
        cveId: p.cve,
        source: "metasploit",
        ...(fromRef ? { url: `https://github.com/rapid7/metasploit-framework/blob/master/${fromRef}` } : {}),
        type: "exploit",
        title: asString(m.Title) ?? m.Name,
        details: { metasploit: { ...metasploitObject(fromRef), name: m.Name } }
      })
    }
    return [{ kind: "exploits", summaryKey: "metasploit", exploits }]
  }
  const fullname = asString(p.fullname)
  if (fullname === undefined) return problem(item.position, "Metasploit module without fullname")
  const modulePath = asString(p.path)?.replace(/^\//, "") ?? `modules/${fullname}.rb`
  const createdAt = unixSeconds(p.disclosure_date) ?? unixSeconds(p.mod_time)
  const cves = [...new Set(asArray(p.references).map((r) => canonicalId(String(r))).filter((r) => CVE_ID.test(r)))]
  for (const cve of cves) {
    exploits.push({
      uuid: exploitUuid("metasploit", modulePath.replace(/^modules\//, "").replace(/\.rb$/, ""), cve),
      cveId: cve,
      source: "metasploit",
      url: `https://github.com/rapid7/metasploit-framework/blob/master/${modulePath}`,
      type: "exploit",
      title: asString(p.name) ?? fullname,
      ...(createdAt !== undefined ? { createdAt } : {}),
      details: { metasploit: { ...metasploitObject(modulePath), name: modulePath.split("/").pop() } }
    })
  }
  return exploits.length > 0 ? [{ kind: "exploits", summaryKey: "metasploit", exploits }] : []
}
