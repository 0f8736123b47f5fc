import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import * as nuclei from "../../src/ingest/formats/nuclei.ts"
import type { UpstreamItem } from "../../src/ingest/Upstream.ts"
import type { ExploitRecord } from "../../src/vulns/Normalised.ts"
import { exploits, FIXTURES, ingestTree } from "./corpus.ts"

const BLOB = "https://github.com/projectdiscovery/nuclei-templates/blob/main/"

/** A template as the reader makes it from a file at `position`. */
const template = (parsed: Record<string, unknown>, position = "sources/nuclei/x.yaml"): UpstreamItem => ({
  source: "nuclei",
  identifier: `template:${String(parsed.id)}`,
  raw: "",
  position,
  parsed
})

const exploitsOf = (item: UpstreamItem): ReadonlyArray<ExploitRecord> => {
  const out = nuclei.normalise(item)
  if (!Array.isArray(out)) throw new Error(`not normalised: ${JSON.stringify(out)}`)
  return out.flatMap((n) => n.kind === "exploits" ? n.exploits : [])
}

const info = { name: "x", severity: "high", classification: { "cve-id": "CVE-2024-0001" } }

describe("nuclei rows carry the template's path and URL (spec 1 `nuclei.path`, `templateUrl`)", () => {
  it("every nuclei row of the fixture tree, templates included, names the path its cves.json line gives", () => {
    const rows = exploits(ingestTree(FIXTURES).outcomes.filter((o) => o.source === "nuclei"))
    // 29 CVEs, each a line of corpus/nuclei/cves.json, a per-CVE copy of that line and the template.
    expect(rows).toHaveLength(87)
    const byUuid = new Map<string, Set<string>>()
    for (const row of rows) {
      const details = row.details.nuclei as { path?: string; templateUrl?: string }
      expect(row.url, `${row.cveId}: ${JSON.stringify(row.details)}`).toBe(details.templateUrl)
      expect(details.templateUrl).toBe(`${BLOB}${details.path}`)
      byUuid.set(row.uuid, new Set([...(byUuid.get(row.uuid) ?? []), details.path!]))
    }
    expect(byUuid.size).toBe(29)
    for (const paths of byUuid.values()) expect(paths.size).toBe(1)
    // javascript templates keep their own folder.
    const activemq = rows.find((r) => r.cveId === "CVE-2023-46604")!
    expect((activemq.details.nuclei as { path: string }).path).toBe("javascript/cves/2023/CVE-2023-46604.yaml")
  })

  it("a template from the fixtures names the path of its own cves.json entry", () => {
    const dir = `${FIXTURES}sources/nuclei/`
    const entry = JSON.parse(readFileSync(`${dir}CVE-2021-44228.cves-json-entry.json`, "utf8"))[0]
    const [row] = exploitsOf(template({ id: "CVE-2021-44228", info, http: [{}] }))
    expect(entry.file_path).toBe("http/cves/2021/CVE-2021-44228.yaml")
    expect(row!.url).toBe(`${BLOB}${entry.file_path}`)
    expect(row!.details.nuclei).toMatchObject({
      path: entry.file_path,
      rawUrl: `https://raw.githubusercontent.com/projectdiscovery/nuclei-templates/main/${entry.file_path}`
    })
  })

  it("the folder of a nuclei-templates checkout wins over the convention", () => {
    const [row] = exploitsOf(
      template({ id: "CVE-2024-0001", info, http: [{}] }, "checkout/network/cves/2024/CVE-2024-0001.yaml")
    )
    expect(row!.url).toBe(`${BLOB}network/cves/2024/CVE-2024-0001.yaml`)
    const [tcp] = exploitsOf(template({ id: "CVE-2024-0001", info, tcp: [{}] }))
    expect(tcp!.url).toBe(`${BLOB}network/cves/2024/CVE-2024-0001.yaml`)
  })

  it("no URL rather than a guess where the convention does not settle the folder", () => {
    const cases: ReadonlyArray<Record<string, unknown>> = [
      { id: "CVE-2024-0001", info, dns: [{}] },
      { id: "CVE-2024-0001", info, http: [{}], javascript: [{}] },
      { id: "CVE-2024-0001", info, http: [{ fuzzing: [{}] }] },
      { id: "CVE-2024-0001", info },
      { id: "apache-struts-rce", info, http: [{}] }
    ]
    for (const parsed of cases) {
      const rows = exploitsOf(template(parsed))
      expect(rows, JSON.stringify(parsed)).toHaveLength(1)
      expect(rows[0]!.url, JSON.stringify(parsed)).toBeUndefined()
      expect(rows[0]!.details.nuclei, JSON.stringify(parsed)).not.toHaveProperty("path")
    }
  })
})
