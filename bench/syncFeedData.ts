/**
 * The sync bench's feed mirror at real size, generated once and kept under
 * `.cache/bench-sync/<count>-<key>/` (gitignored), where the key hashes what
 * produced it: this generator, the zip writer, the recorded samples it clones
 * and the count. Another key of the same count is removed when a new one is
 * built; a build that does not finish leaves no folder under the final name.
 *
 * Records are the feed mirror's recorded real samples (test/fixtures/data,
 * read by test/support/feedMirror.ts and mirror/) cloned under new identifiers
 * (`cloneId`), their aliases cloned alongside so alias groups keep the size
 * they have upstream (OSV's PYSEC clone k and the CVE List's clone k of the
 * same CVE meet, as the originals do). COUNT records in the proportions
 * (300 k CVE List : 300 k NVD : 400 k OSV : 300 k EPSS rows), each publisher's
 * layout: the CVE List baseline (`…_all_CVEs_at_midnight.zip.zip` holding
 * `cves.zip`), NVD API 2.0 pages of 2,000, OSV's per-ecosystem `all.zip` and
 * `modified_id.csv`, EPSS's `epss_scores-current.csv.gz`. Plus the one-hour
 * delta's records (`delta.ndjson` per source), which the mirror stamps with the
 * time it publishes them.
 */
import { hash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { nvdItems } from "../test/support/feedMirror.ts"
import { cvelistRecords, cvePath } from "../test/support/mirror/cvelist.ts"
import { osvRecords } from "../test/support/mirror/osv.ts"
import { cloneId, cloneText, namesOf } from "./ingestClones.ts"
import { zipFile } from "./zipFile.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const CACHE = join(ROOT, ".cache/bench-sync")
const FIXTURES = join(ROOT, "test/fixtures/data/sources")
export const NVD_PAGE = 2000
export const BASELINE_NAME = "2026-12-01_all_CVEs_at_midnight.zip.zip"
export const DELTA_NAME = "2026-12-01_delta_CVEs_at_0100Z.zip"
/** The one-hour delta: records changed at each publisher (about 500 in all). */
const DELTA = { mitre: 150, nvd: 150, osv: 200 }

export interface SyncFeedData {
  readonly dir: string
  readonly counts: { readonly mitre: number; readonly nvd: number; readonly osv: number; readonly epss: number }
  readonly nvdTotal: number
  readonly ecosystems: ReadonlyArray<string>
  readonly delta: { readonly mitre: number; readonly nvd: number; readonly osv: number }
}

/** The proportions at `count` records in all. */
export const sharesOf = (count: number) => {
  const mitre = Math.round((count * 3) / 13)
  const nvd = Math.round((count * 3) / 13)
  const osv = Math.round((count * 4) / 13)
  return { mitre, nvd, osv, epss: count - mitre - nvd - osv }
}

/**
 * `count` clones of `originals` in identifier order, as the publishers' files list them (the CVE
 * List's paths, OSV's archives, EPSS's rows): the originals sorted, each one's clones 1, 2, … in a
 * row (a clone's identifier is its original's with digits appended, so the order holds). Interleaved
 * (clone 1 of each, then clone 2 of each) every batch would write all over the tables' keys, which no
 * feed does on a first load. `delta` marks about `deltaCount` of them spread over the whole.
 */
function* clones<T extends { readonly id: string }>(originals: ReadonlyArray<T>, count: number, deltaCount = 0) {
  const sorted = [...originals].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const each = Math.ceil(count / sorted.length)
  const every = deltaCount === 0 ? Infinity : Math.max(1, Math.floor(count / deltaCount))
  let n = 0
  for (const original of sorted) {
    for (let k = 1; k <= each && n < count; k++, n++) {
      yield { original, k, delta: n % every === 0 && n / every < deltaCount }
    }
  }
}

const GENERATOR_FILES = ["bench/syncFeedData.ts", "bench/zipFile.ts", "bench/ingestClones.ts"]
const keyOf = (count: number) => {
  const parts = [`count=${count}`, ...GENERATOR_FILES.map((f) => readFileSync(join(ROOT, f), "utf8"))]
  for (const source of ["mitre", "nist-nvd", "osv", "epss"]) {
    for (const f of readdirSync(join(FIXTURES, source)).filter((f) => /\.(json|csv)$/.test(f)).sort()) {
      parts.push(f, readFileSync(join(FIXTURES, source, f), "utf8"))
    }
  }
  return hash("sha256", parts.join("\u0000"), "hex").slice(0, 12)
}

const build = (dir: string, count: number): SyncFeedData => {
  const counts = sharesOf(count)
  const lap = (() => {
    const started = performance.now()
    return (what: string) => console.error(`  ${what}: ${Math.round((performance.now() - started) / 1000)} s`)
  })()

  // CVE List: the inner `cves.zip`, then the baseline holding it (stored, as the CVE Project's is).
  mkdirSync(join(dir, "mitre"), { recursive: true })
  const mitre = cvelistRecords().map((r) => ({ id: r.id, text: r.text.toString("utf8") }))
  const cveIds: Array<string> = []
  const inner = zipFile(join(dir, "mitre/cves.zip"))
  const mitreDelta: Array<string> = []
  for (const { delta, k, original } of clones(mitre, counts.mitre, DELTA.mitre)) {
    const id = cloneId(original.id, k)
    const text = cloneText(original.text, [original.id], k)
    inner.add(cvePath(id), Buffer.from(text))
    cveIds.push(id)
    if (delta) {
      const doc = JSON.parse(text) as { cveMetadata: Record<string, unknown> }
      doc.cveMetadata.dateUpdated = "2026-12-01T00:42:00.000Z"
      mitreDelta.push(JSON.stringify(doc))
    }
  }
  inner.close()
  const outer = zipFile(join(dir, "mitre", BASELINE_NAME))
  outer.addStoredFile("cves.zip", join(dir, "mitre/cves.zip"), statSync(join(dir, "mitre/cves.zip")).size)
  outer.close()
  rmSync(join(dir, "mitre/cves.zip"))
  writeFileSync(join(dir, "mitre/delta.ndjson"), `${mitreDelta.join("\n")}\n`)
  lap(`CVE List baseline, ${counts.mitre} records`)

  // NVD: the API's pages as `startIndex` gives them (envelope and all), and the delta's `cve` objects.
  mkdirSync(join(dir, "nvd"), { recursive: true })
  const nvd = nvdItems().map((item) => ({ id: String(item.cve.id), text: JSON.stringify(item) }))
  let page: Array<string> = []
  const nvdDelta: Array<string> = []
  let startIndex = 0
  const flush = () => {
    writeFileSync(
      join(dir, `nvd/page-${startIndex}.json`),
      `{"resultsPerPage":${page.length},"startIndex":${startIndex},"totalResults":${counts.nvd},"format":"NVD_CVE",` +
        `"version":"2.0","timestamp":"2026-12-01T00:00:00.000","vulnerabilities":[${page.join(",")}]}`
    )
    startIndex += page.length
    page = []
  }
  for (const { delta, k, original } of clones(nvd, counts.nvd, DELTA.nvd)) {
    const text = cloneText(original.text, [original.id], k)
    page.push(text)
    if (delta) nvdDelta.push(text)
    if (page.length === NVD_PAGE) flush()
  }
  if (page.length > 0) flush()
  writeFileSync(join(dir, "nvd/delta.ndjson"), `${nvdDelta.join("\n")}\n`)
  lap(`NVD pages, ${counts.nvd} records`)

  // OSV: each ecosystem's all.zip and modified_id.csv (newest first), in the samples' proportions.
  const byEcosystem = osvRecords()
  const osv = Object.entries(byEcosystem).flatMap(([ecosystem, records]) =>
    records.map((r) => {
      const text = r.text.toString("utf8")
      return { ecosystem, id: r.id, modified: r.modified, text, ids: namesOf(r.id, JSON.parse(text)) }
    })
  )
  const ecosystems = Object.keys(byEcosystem)
  const archives = new Map(ecosystems.map((e) => {
    mkdirSync(join(dir, "osv", e), { recursive: true })
    return [e, { zip: zipFile(join(dir, "osv", e, "all.zip")), lines: [] as Array<string> }]
  }))
  const osvDelta: Array<string> = []
  for (const { delta, k, original } of clones(osv, counts.osv, DELTA.osv)) {
    const text = cloneText(original.text, original.ids, k)
    const id = cloneId(original.id, k)
    const archive = archives.get(original.ecosystem)!
    archive.zip.add(`${id}.json`, Buffer.from(text))
    archive.lines.push(`${original.modified},${id}`)
    if (delta) osvDelta.push(JSON.stringify({ ecosystem: original.ecosystem, id, text }))
  }
  for (const [e, archive] of archives) {
    archive.zip.close()
    archive.lines.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0))
    writeFileSync(join(dir, "osv", e, "modified_id.csv"), `${archive.lines.join("\n")}\n`)
  }
  writeFileSync(join(dir, "osv/delta.ndjson"), `${osvDelta.join("\n")}\n`)
  lap(`OSV archives, ${counts.osv} records in ${ecosystems.join(", ")}`)

  // EPSS: a score for each CVE the other feeds publish (then made-up ones), in the file's own layout.
  mkdirSync(join(dir, "epss"), { recursive: true })
  const nvdIds = nvd.length === 0 ? [] : [...clones(nvd, counts.nvd)].map(({ original, k }) => cloneId(original.id, k))
  const scored = [...new Set([...cveIds, ...nvdIds])].sort()
  const rows = ["#model_version:v2026.06.15,score_date:2026-12-01T00:00:00Z", "cve,epss,percentile"]
  for (let n = 0; n < counts.epss; n++) {
    const id = scored[n] ?? `CVE-2026-${9_000_000 + n}`
    const score = ((n * 7919) % 100_000) / 100_000
    rows.push(`${id},${score.toFixed(5)},${((n * 104_729) % 100_000 / 100_000).toFixed(5)}`)
  }
  writeFileSync(join(dir, "epss/epss_scores-current.csv.gz"), gzipSync(`${rows.join("\n")}\n`))
  lap(`EPSS scores, ${counts.epss} rows`)

  const data: SyncFeedData = { dir, counts, nvdTotal: counts.nvd, ecosystems, delta: DELTA }
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(data, null, 2))
  return data
}

/** The mirror's files for `count` records: reused when built before from the same inputs, else built (minutes at full size). */
export const syncFeedData = (count: number): SyncFeedData => {
  const name = `${count}-${keyOf(count)}`
  const dir = join(CACHE, name)
  if (existsSync(join(dir, "manifest.json"))) {
    console.error(`reusing .cache/bench-sync/${name}`)
    return { ...(JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as SyncFeedData), dir }
  }
  mkdirSync(CACHE, { recursive: true })
  for (const stale of readdirSync(CACHE).filter((d) => d.startsWith(`${count}-`))) {
    console.error(`removing .cache/bench-sync/${stale}: its generator or samples changed, or it was not finished`)
    rmSync(join(CACHE, stale), { recursive: true, force: true })
  }
  const building = `${dir}.building`
  rmSync(building, { recursive: true, force: true })
  console.error(`generating the feed mirror's files for ${count} records in .cache/bench-sync/${name} (once) …`)
  const data = build(building, count)
  renameSync(building, dir)
  return { ...data, dir }
}
