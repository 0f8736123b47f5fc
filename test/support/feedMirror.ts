import { Effect } from "effect"
import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { type ApiMirror, apiMirror, apiMirrorConfig } from "./mirror/index.ts"

/**
 * A loopback stand-in for the publishers' catalogue servers: it serves the
 * repository's recorded real samples (test/fixtures/data) at the publishers'
 * file names, with ETag and Last-Modified, answers 304 to a matching
 * conditional request, and can be switched to misbehave one file at a time.
 */
export type Fault =
  | { readonly kind: "status"; readonly status: 429 | 503; readonly retryAfter?: string }
  | { readonly kind: "stopHalfway" }
  /** Half the body, then nothing more until the client goes away (a client killed mid-download). */
  | { readonly kind: "stall" }
  | { readonly kind: "truncatedGzip" }
  | { readonly kind: "bomb" }
  | { readonly kind: "wrongType" }
  | { readonly kind: "lyingLength" }
  /** 302 to `location` (another mirror path, or an address the client must refuse to follow). */
  | { readonly kind: "redirect"; readonly location: string }
  /** Answer the next N requests with this fault, then behave. */
  | { readonly kind: "times"; readonly n: number; readonly fault: Fault }
  /** Behave for the next N requests, then answer with this fault (a later page of a paged feed, say). */
  | { readonly kind: "after"; readonly n: number; readonly fault: Fault }

export interface MirrorRequest {
  readonly path: string
  readonly conditional: boolean
  readonly status: number
  readonly userAgent: string | undefined
  readonly query: string
  /** Whether an apiKey header came (never its value). */
  readonly apiKey: boolean
  /** Whether an Authorization header came (never its value). */
  readonly authorization: boolean
  /** When it arrived (ms since the epoch). */
  readonly at: number
}

interface File {
  body: Buffer
  contentType: string
  etag: string
  lastModified: string
}

export interface FeedMirror {
  readonly url: (path: string) => string
  /** Publishes new content at `path` (new ETag, Last-Modified one second later than before). */
  readonly publish: (path: string, body: Buffer | string, contentType: string) => void
  readonly fault: (path: string, fault: Fault | undefined) => void
  readonly requests: Array<MirrorRequest>
  /** The NVD API's records (`{cve}` items, as in its pages), served at `/nist-nvd/cves/2.0`; change them to publish. */
  readonly nvd: Array<{ cve: Record<string, unknown> }>
  /** The API publishers (GHSA, EUVD, PoC-in-GitHub, VulnCheck): `test/support/mirror/`. */
  readonly api: ApiMirror
}

const FIXTURES = fileURLToPath(new URL("../fixtures/data/", import.meta.url))
const fixture = (path: string) => readFileSync(`${FIXTURES}${path}`)

/** The KEV catalogue as CISA serves it, around the 44 recorded entries (each verbatim). */
export const kevCatalogue = (extra: ReadonlyArray<unknown> = []) => {
  const dir = `${FIXTURES}sources/cisa-kev/`
  const entries = readdirSync(dir).sort().map((f) => JSON.parse(readFileSync(dir + f, "utf8")) as unknown)
  const vulnerabilities = [...entries, ...extra]
  return JSON.stringify({
    title: "CISA Catalog of Known Exploited Vulnerabilities",
    catalogVersion: "2025.08.25",
    dateReleased: "2025-08-25T17:00:00.000Z",
    count: vulnerabilities.length,
    vulnerabilities
  })
}

/** The recorded samples at the paths the feeds are pointed at. */
export const SAMPLES: ReadonlyArray<readonly [string, () => Buffer, string]> = [
  ["/cisa-kev/known_exploited_vulnerabilities.json", () => Buffer.from(kevCatalogue()), "application/json"],
  [
    "/epss/epss_scores-current.csv.gz",
    () => gzipSync(fixture("sources/epss/epss_scores.subset.csv")),
    "application/gzip"
  ],
  [
    "/exploit-db/files_exploits.csv",
    () => fixture("sources/exploit-db/files_exploits.subset.csv"),
    "text/plain; charset=utf-8"
  ],
  ["/nuclei/cves.json", () => fixture("corpus/nuclei/cves.json"), "text/plain; charset=utf-8"]
]

/** The recorded NVD API 2.0 responses' items (the one bare fkie `cve` object wrapped as an item). */
export const nvdItems = (): Array<{ cve: Record<string, unknown> }> => {
  const dir = `${FIXTURES}sources/nist-nvd/`
  return readdirSync(dir).sort().flatMap((f) => {
    const doc = JSON.parse(readFileSync(dir + f, "utf8")) as {
      vulnerabilities?: Array<{ cve: Record<string, unknown> }>
    } & Record<string, unknown>
    return doc.vulnerabilities ?? [{ cve: doc }]
  })
}

/** One page of NVD's API: its envelope, `startIndex`/`resultsPerPage` paging and `lastMod*Date` windows over `cve.lastModified`. */
const nvdPage = (items: ReadonlyArray<{ cve: Record<string, unknown> }>, query: URLSearchParams) => {
  const from = query.get("lastModStartDate")
  const to = query.get("lastModEndDate")
  const time = (s: string) => Date.parse(/[Z+]/.test(s.slice(10)) ? s : `${s}Z`)
  const chosen = items.filter(({ cve }) => {
    const t = time(String(cve.lastModified))
    return (from === null || t >= time(from)) && (to === null || t <= time(to))
  })
  const start = Number(query.get("startIndex") ?? 0)
  const size = Math.min(2000, Number(query.get("resultsPerPage") ?? 2000))
  const vulnerabilities = chosen.slice(start, start + size)
  return JSON.stringify({
    resultsPerPage: vulnerabilities.length,
    startIndex: start,
    totalResults: chosen.length,
    format: "NVD_CVE",
    version: "2.0",
    timestamp: new Date().toISOString().slice(0, 23),
    vulnerabilities
  })
}

const tagOf = (body: Buffer) => `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`

const answerFault = (fault: Fault, file: File, req: IncomingMessage, res: ServerResponse): number => {
  switch (fault.kind) {
    case "times":
    case "after":
      return answerFault(fault.fault, file, req, res)
    case "status":
      res.writeHead(fault.status, { "retry-after": fault.retryAfter ?? "3600", "content-type": "text/plain" })
      res.end("slow down")
      return fault.status
    case "redirect":
      res.writeHead(302, { location: fault.location }).end()
      return 302
    case "wrongType":
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", etag: file.etag })
      res.end("<html><body>Access denied</body></html>")
      return 200
    case "stopHalfway":
      // Chunked, so no length tells the client what is missing: the connection just drops.
      res.writeHead(200, { "content-type": file.contentType, etag: file.etag })
      res.write(file.body.subarray(0, file.body.length >> 1), () => res.socket?.destroy())
      return 200
    case "stall":
      res.writeHead(200, { "content-type": file.contentType, etag: file.etag })
      res.write(file.body.subarray(0, file.body.length >> 1))
      return 200
    case "lyingLength":
      res.writeHead(200, {
        "content-type": file.contentType,
        etag: file.etag,
        "content-length": String(file.body.length + 4096)
      })
      res.write(file.body, () => res.socket?.destroy())
      return 200
    case "truncatedGzip": {
      const cut = file.body.subarray(0, Math.max(20, file.body.length - 40))
      res.writeHead(200, { "content-type": file.contentType, etag: `"cut"`, "content-length": String(cut.length) })
      res.end(cut)
      return 200
    }
    case "bomb": {
      // 64 MiB of zeros is 64 KiB of gzip: a ratio of about 1,000.
      const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 })
      res.writeHead(200, { "content-type": file.contentType, etag: `"bomb"`, "content-length": String(bomb.length) })
      res.end(bomb)
      return 200
    }
  }
}

/** Starts a mirror on 127.0.0.1 for the scope's lifetime, serving `SAMPLES`. */
export const feedMirror = Effect.acquireRelease(
  Effect.callback<{ readonly mirror: FeedMirror; readonly close: () => void }>((resume) => {
    const files = new Map<string, File>()
    const faults = new Map<string, Fault>()
    const requests: Array<MirrorRequest> = []
    const nvd = nvdItems()
    let port = 0
    const api = apiMirror((path) => `http://127.0.0.1:${port}${path}`)
    let clock = Date.parse("2025-08-25T17:00:00Z")
    const publish = (path: string, body: Buffer | string, contentType: string) => {
      const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body)
      clock += 1000
      files.set(path, { body: bytes, contentType, etag: tagOf(bytes), lastModified: new Date(clock).toUTCString() })
    }
    for (const [path, body, type] of SAMPLES) publish(path, body(), type)
    /** The fault this request at `path` gets, if any, counting `times` and `after` down. */
    const dueFault = (path: string): Fault | undefined => {
      const fault = faults.get(path)
      if (fault?.kind === "after") {
        if (fault.n > 0) {
          faults.set(path, { ...fault, n: fault.n - 1 })
          return undefined
        }
        faults.set(path, fault.fault)
        return dueFault(path)
      }
      if (fault?.kind === "times") {
        if (fault.n <= 1) faults.delete(path)
        else faults.set(path, { ...fault, n: fault.n - 1 })
      }
      return fault
    }
    const server = createServer((req, res) => {
      const parsed = new URL(req.url ?? "/", "http://mirror")
      const path = parsed.pathname
      const conditional = req.headers["if-none-match"] !== undefined || req.headers["if-modified-since"] !== undefined
      const note = (status: number) =>
        requests.push({
          path,
          conditional,
          status,
          userAgent: req.headers["user-agent"],
          query: parsed.search,
          apiKey: req.headers.apikey !== undefined,
          authorization: req.headers.authorization !== undefined,
          at: Date.now()
        })
      if (api.answer(req, res, parsed)) return
      if (path === "/nist-nvd/cves/2.0") {
        const page = Buffer.from(nvdPage(nvd, parsed.searchParams))
        const fault = dueFault(path)
        if (fault !== undefined) {
          const file = { body: page, contentType: "application/json", etag: tagOf(page), lastModified: "" }
          return note(answerFault(fault, file, req, res))
        }
        res.writeHead(200, { "content-type": "application/json" }).end(page)
        return note(200)
      }
      const file = files.get(path)
      if (file === undefined) {
        res.writeHead(404).end()
        return note(404)
      }
      const fault = dueFault(path)
      if (fault !== undefined) return note(answerFault(fault, file, req, res))
      if (
        req.headers["if-none-match"] === file.etag ||
        (req.headers["if-none-match"] === undefined && req.headers["if-modified-since"] === file.lastModified)
      ) {
        res.writeHead(304, { etag: file.etag, "last-modified": file.lastModified }).end()
        return note(304)
      }
      res.writeHead(200, {
        "content-type": file.contentType,
        "content-length": String(file.body.length),
        etag: file.etag,
        "last-modified": file.lastModified
      })
      res.end(file.body)
      note(200)
    })
    server.listen(0, "127.0.0.1", () => {
      port = (server.address() as AddressInfo).port
      resume(Effect.succeed({
        mirror: {
          url: (path) => `http://127.0.0.1:${port}${path}`,
          publish,
          fault: (path, fault) => void (fault === undefined ? faults.delete(path) : faults.set(path, fault)),
          requests,
          nvd,
          api
        },
        close: () => {
          server.closeAllConnections()
          server.close()
        }
      }))
    })
  }),
  ({ close }) => Effect.sync(close)
).pipe(Effect.map(({ mirror }) => mirror))

/** The `VDB_FEED_<SOURCE>_URL` overrides pointing every feed at the mirror. */
export const mirrorConfig = (mirror: FeedMirror): Record<string, string> => ({
  ...Object.fromEntries(SAMPLES.map(([path]) => {
    const source = path.split("/")[1]!
    return [`VDB_FEED_${source.toUpperCase().replaceAll("-", "_")}_URL`, mirror.url(path)]
  })),
  VDB_FEED_NIST_NVD_URL: mirror.url("/nist-nvd/cves/2.0"),
  ...apiMirrorConfig(mirror.url)
})
