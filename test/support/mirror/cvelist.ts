import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { FeedMirror } from "../feedMirror.ts"
import { zipOf } from "./zipWriter.ts"

/**
 * The CVE List V5's GitHub releases on the feed mirror: a release list in
 * the shape of `GET /repos/CVEProject/cvelistV5/releases` (newest first,
 * `tag_name`, `published_at`, `assets[].name/browser_download_url`) at
 * `/mitre/releases`, and each asset at `/mitre/download/<tag>/<name>`:
 * the baseline `…_all_CVEs_at_midnight.zip.zip` (a zip holding `cves.zip`,
 * holding `cves/<year>/<n>xxx/CVE-….json`) and the deltas
 * (`deltaCves/CVE-….json`). Records are the recorded real ones of
 * test/fixtures/data/sources/mitre.
 */
const DIR = fileURLToPath(new URL("../../fixtures/data/sources/mitre/", import.meta.url))

export const cvelistRecords = (): Array<{ id: string; text: Buffer }> =>
  readdirSync(DIR).filter((f) => f.endsWith(".json")).sort().map((f) => ({
    id: f.slice(0, -5),
    text: readFileSync(DIR + f)
  }))

/** `cves/2021/44xxx/CVE-2021-44228.json`, the repository's layout. */
export const cvePath = (id: string) => {
  const [, year, number] = id.split("-")
  return `cves/${year}/${number!.slice(0, -3)}xxx/${id}.json`
}

export const RELEASES_PATH = "/mitre/releases"

export interface CvelistMirror {
  /** Publishes a release (newest first in the list) with these assets; returns each asset's mirror path. */
  readonly release: (tag: string, assets: ReadonlyArray<readonly [string, Buffer]>) => Array<string>
  readonly assetPath: (tag: string, name: string) => string
}

export const baselineZip = (records: ReadonlyArray<{ id: string; text: Buffer }>) =>
  zipOf([{ name: "cves.zip", store: true, data: zipOf(records.map((r) => ({ name: cvePath(r.id), data: r.text }))) }])

export const deltaZip = (records: ReadonlyArray<{ id: string; text: Buffer }>) =>
  zipOf(records.map((r) => ({ name: `deltaCves/${r.id}.json`, data: r.text })))

export const cvelistMirror = (mirror: FeedMirror): CvelistMirror => {
  const releases: Array<
    { tag_name: string; name: string; published_at: string; assets: Array<Record<string, unknown>> }
  > = []
  const assetPath = (tag: string, name: string) => `/mitre/download/${tag}/${name}`
  return {
    assetPath,
    release: (tag, assets) => {
      const paths = assets.map(([name, body]) => {
        const path = assetPath(tag, name)
        mirror.publish(path, body, "application/octet-stream")
        return path
      })
      releases.unshift({
        tag_name: tag,
        name: tag.replace(/^cve_/, "CVE ").replace("_", " "),
        published_at: new Date().toISOString(),
        assets: assets.map(([name, body]) => ({
          name,
          size: body.length,
          content_type: "application/zip",
          browser_download_url: mirror.url(assetPath(tag, name))
        }))
      })
      mirror.publish(RELEASES_PATH, JSON.stringify(releases), "application/json; charset=utf-8")
      return paths
    }
  }
}
