import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { aliasComponent, aliasEdges } from "../../src/ingest/formats/aliases.ts"
import { exploits, FIXTURES, ingestTree, records } from "./corpus.ts"

interface Entry {
  readonly sources: ReadonlyArray<string>
  readonly aliases: ReadonlyArray<string>
  readonly exploits?: {
    exploitDb: number
    exploitDbRowsInSubset: number
    metasploit: number
    nuclei: number
    pocInGithub: boolean
  }
}
const manifest = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8")).ids as Record<string, Entry>

/** Manifest names to spec 1 source names: vulnrichment records are stored as `mitre` (spec 1 has no vulnrichment). */
const specName = (name: string): string => name === "vulnrichment" ? "mitre" : name

const tree = ingestTree(FIXTURES)
const all = records(tree.outcomes)
/** The manifest counts alias lists only; GHSA ids known from a CVE record's references are checked apart. */
const listed = (r: (typeof all)[number]) => r.aliases.filter((a) => !(r.referencedAliases ?? []).includes(a))
const edges = all.flatMap((r) => aliasEdges(r.identifier, listed(r)))
/** Which sources hold a record that is the id or names it as an alias (the manifest's definition). */
const holders = new Map<string, Set<string>>()
for (const r of all) {
  for (const id of [r.identifier, ...listed(r)]) {
    const s = holders.get(id) ?? new Set<string>()
    s.add(r.source)
    holders.set(id, s)
  }
}

describe("sources and aliases per manifest.json", () => {
  it.each(Object.keys(manifest))("%s", (id) => {
    const m = manifest[id]!
    expect([...(holders.get(id) ?? [])].sort()).toEqual([...new Set(m.sources.map(specName))].sort())
    expect(aliasComponent(edges, id)).toEqual([...m.aliases].sort())
  })
})

describe("aliases from references", () => {
  it("are GHSA advisory pages referenced by the CVE record itself", () => {
    const extra = all.flatMap((r) => (r.referencedAliases ?? []).map((a) => [r.identifier, a] as const))
    expect(extra.length).toBeGreaterThan(0)
    for (const [id, ghsa] of extra) {
      expect(ghsa).toMatch(/^GHSA(-[23456789cfghjmpqrvwx]{4}){3}$/)
      const r = all.find((x) => x.identifier === id && x.source === "mitre")!
      expect(JSON.stringify(r.record)).toContain(ghsa)
    }
  })
})

const list = exploits(tree.outcomes)
const count = (cve: string, source: string, from?: (file: string) => boolean) =>
  new Set(tree.outcomes.flatMap((o) =>
    "reason" in o.result || (from && !from(o.file)) ?
      [] :
      o.result.flatMap((n) =>
        n.kind === "exploits" ? n.exploits.filter((e) => e.cveId === cve && e.source === source).map((e) => e.uuid) : []
      )
  )).size

describe("exploit counts per manifest.json", () => {
  const cves = Object.entries(manifest).filter(([, m]) => m.exploits !== undefined)
  it.each(cves.map(([id]) => id))("%s", (cve) => {
    const m = manifest[cve]!.exploits!
    expect(count(cve, "exploit-db", (f) => f.endsWith("cveToEdbid.json"))).toBe(m.exploitDb)
    expect(count(cve, "exploit-db", (f) => f.endsWith(".csv"))).toBe(m.exploitDbRowsInSubset)
    expect(count(cve, "metasploit")).toBe(m.metasploit)
    expect(count(cve, "nuclei", (f) => f.endsWith("cves.json"))).toBe(m.nuclei)
    expect(count(cve, "poc-in-github", (f) => f.endsWith("poc_index.json")) > 0).toBe(m.pocInGithub)
  })

  it("a CSV row and the mapping give the same uuid for the same EDB id and CVE", () => {
    const csv = list.filter((e) =>
      e.source === "exploit-db" && e.cveId === "CVE-2021-44228" && e.createdAt !== undefined
    )
    const mapped = new Set(
      list.filter((e) => e.source === "exploit-db" && e.title?.startsWith("Exploit-DB ")).map((e) => e.uuid)
    )
    expect(csv.length).toBeGreaterThan(0)
    expect(csv.some((e) => mapped.has(e.uuid))).toBe(true)
  })
})
