import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { FeedMirror } from "../feedMirror.ts"
import { zipOf } from "./zipWriter.ts"

/**
 * cisagov/vulnrichment through GitHub's REST API on the feed mirror, under
 * `/vulnrichment`: `commits/develop` (the head commit, `{sha, …}`),
 * `zipball/<sha>` (the archive, entries under `cisagov-vulnrichment-<sha7>/`),
 * `compare/<base>...<head>` (`{status, files[].filename/status/raw_url}`) and
 * the raw files at `raw/<sha>/<path>`. Records are the recorded real ones of
 * test/fixtures/data/sources/vulnrichment, at the repository's paths.
 */
const DIR = fileURLToPath(new URL("../../fixtures/data/sources/vulnrichment/", import.meta.url))

/** `2023/20xxx/CVE-2023-20198.json`. */
export const repositoryPath = (id: string) => {
  const [, year, number] = id.split("-")
  return `${year}/${number!.slice(0, -3)}xxx/${id}.json`
}

export const vulnrichmentFiles = (): Map<string, Buffer> =>
  new Map(
    readdirSync(DIR).filter((f) => f.endsWith(".json")).sort().map((
      f
    ) => [repositoryPath(f.slice(0, -5)), readFileSync(DIR + f)])
  )

export interface VulnrichmentMirror {
  /** Commits this tree on `develop`; returns the commit's sha. */
  readonly commit: (tree: ReadonlyMap<string, Buffer>) => string
}

export const vulnrichmentMirror = (mirror: FeedMirror): VulnrichmentMirror => {
  const history: Array<{ sha: string; tree: ReadonlyMap<string, Buffer> }> = []
  return {
    commit: (tree) => {
      const sha = createHash("sha1").update(`commit ${history.length}`).digest("hex")
      const archive = zipOf(
        [...tree].map(([path, data]) => ({ name: `cisagov-vulnrichment-${sha.slice(0, 7)}/${path}`, data }))
      )
      mirror.publish(`/vulnrichment/zipball/${sha}`, archive, "application/zip")
      for (const [path, data] of tree) {
        mirror.publish(`/vulnrichment/raw/${sha}/${path}`, data, "text/plain; charset=utf-8")
      }
      for (const older of history) {
        const files = [...tree].flatMap(([path, data]) => {
          const before = older.tree.get(path)
          if (before !== undefined && before.equals(data)) return []
          return [{
            filename: path,
            status: before === undefined ? "added" : "modified",
            raw_url: mirror.url(`/vulnrichment/raw/${sha}/${path}`)
          }]
        })
        const removed = [...older.tree.keys()].filter((p) => !tree.has(p)).map((p) => ({
          filename: p,
          status: "removed",
          raw_url: ""
        }))
        const body = {
          status: "ahead",
          ahead_by: history.length - history.indexOf(older),
          behind_by: 0,
          files: [...files, ...removed]
        }
        mirror.publish(
          `/vulnrichment/compare/${older.sha}...${sha}`,
          JSON.stringify(body),
          "application/json; charset=utf-8"
        )
      }
      history.push({ sha, tree: new Map(tree) })
      mirror.publish(
        "/vulnrichment/commits/develop",
        JSON.stringify({ sha, commit: { message: `commit ${history.length}` } }),
        "application/json; charset=utf-8"
      )
      return sha
    }
  }
}
