import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import type { Route } from "./api.ts"
import { answerFault, FIXTURES, note } from "./api.ts"
import { zipOf } from "./zipWriter.ts"

/** The recorded per-CVE files of nomi-sec/PoC-in-GitHub, by their path in the repository. */
export const pocFiles = (): Map<string, Buffer> => {
  const files = new Map<string, Buffer>()
  const one = (dir: string, year: string) => {
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".json"))) {
      files.set(`${year}/${f}`, readFileSync(`${dir}/${f}`))
    }
  }
  one(`${FIXTURES}data/sources/poc-in-github`, "2023")
  one(`${FIXTURES}feeds/poc-in-github/2022`, "2022")
  files.set("README.md", Buffer.from("# PoC-in-GitHub\n"))
  return files
}

/** A zip archive of `files` under `prefix/` (its folder entry first), as GitHub's archives are laid out. */
const archiveOf = (prefix: string, files: ReadonlyMap<string, Buffer>): Buffer =>
  zipOf([
    { name: `${prefix}/`, data: Buffer.alloc(0), store: true },
    ...[...files].map(([path, data]) => ({ name: `${prefix}/${path}`, data }))
  ])

export interface PocState {
  files: Map<string, Buffer>
  /** The head commit: changes when `commit()` publishes the files as they are now. */
  sha: string
  /** Serve the next archive cut in half (a transfer that stopped). */
  cutArchive: boolean
}

export const commit = (state: PocState) => {
  const h = createHash("sha1")
  for (const [p, d] of [...state.files.entries()].sort()) h.update(p).update(d)
  state.sha = h.digest("hex")
}

/**
 * `/poc-in-github/commits/master` (the `sha` media type answers the bare id),
 * `/poc-in-github/zipball/<sha>` (302 to the archive, as GitHub's API redirects
 * to codeload), `/poc-in-github/codeload/<sha>` (the zip of that commit).
 */
export const pocRoute = (state: PocState): Route => (ctx, req, res, url) => {
  if (!url.pathname.startsWith("/poc-in-github/")) return false
  if (answerFault(ctx, req, res, url)) return true
  const answer = (status: number, headers: Record<string, string>, body: Buffer | string) => {
    res.writeHead(status, headers).end(body)
    note(ctx, req, url, status)
    return true
  }
  if (url.pathname === "/poc-in-github/commits/master") {
    return answer(200, { "content-type": "application/vnd.github.sha; charset=utf-8" }, state.sha)
  }
  const zipball = /^\/poc-in-github\/zipball\/([0-9a-f]{40})$/.exec(url.pathname)?.[1]
  if (zipball !== undefined) return answer(302, { location: `/poc-in-github/codeload/${zipball}` }, "")
  const archive = /^\/poc-in-github\/codeload\/([0-9a-f]{40})$/.exec(url.pathname)?.[1]
  if (archive === undefined || archive !== state.sha) return answer(404, { "content-type": "text/plain" }, "Not Found")
  let zip = archiveOf(`nomi-sec-PoC-in-GitHub-${archive.slice(0, 7)}`, state.files)
  if (state.cutArchive) {
    state.cutArchive = false
    zip = zip.subarray(0, zip.length >> 1)
  }
  return answer(200, { "content-type": "application/zip", "content-length": String(zip.length) }, zip)
}
