import type { IngestSource } from "../ingest/Upstream.ts"

/**
 * A source published as one catalogue file, fetched whole by conditional GET
 * (ETag / Last-Modified) and read by the same format reader as `vdb ingest`
 * reads that file. Publishers and URLs: docs/sources.md "Live feeds".
 */
export interface CatalogueFeed {
  readonly source: IngestSource
  /** The publisher's URL (https); `VDB_FEED_<SOURCE>_URL` overrides it. */
  readonly url: string
  /** The name ingestion reads the file as: it picks the reader (JSON, CSV) and appears in positions. */
  readonly fileName: string
  /** The file is gzip on the wire (not a Content-Encoding: the file itself). */
  readonly gzip: boolean
  /** Media types the publisher serves it as. GitHub and GitLab raw files are text/plain whatever they hold. */
  readonly contentTypes: ReadonlyArray<string>
  /** How often `serve` will fetch it (the scheduler comes with ClusterCron). */
  readonly intervalMs: number
}

const DAY = 24 * 60 * 60 * 1000
const RAW_TEXT = ["text/plain", "application/octet-stream"]

export const CATALOGUES: ReadonlyArray<CatalogueFeed> = [
  {
    source: "cisa-kev",
    url: "https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json",
    fileName: "known_exploited_vulnerabilities.json",
    gzip: false,
    contentTypes: ["application/json", ...RAW_TEXT],
    intervalMs: DAY
  },
  {
    // FIRST's daily scores; the -current name redirects to the dated file.
    source: "epss",
    url: "https://epss.empiricalsecurity.com/epss_scores-current.csv.gz",
    fileName: "epss_scores-current.csv",
    gzip: true,
    contentTypes: ["application/gzip", "application/x-gzip", "binary/octet-stream", "application/octet-stream"],
    intervalMs: DAY
  },
  {
    source: "exploit-db",
    url: "https://gitlab.com/exploit-database/exploitdb/-/raw/main/files_exploits.csv",
    fileName: "files_exploits.csv",
    gzip: false,
    contentTypes: ["text/csv", ...RAW_TEXT],
    intervalMs: DAY
  },
  {
    source: "metasploit",
    url: "https://raw.githubusercontent.com/rapid7/metasploit-framework/master/db/modules_metadata_base.json",
    fileName: "modules_metadata_base.json",
    gzip: false,
    contentTypes: ["application/json", ...RAW_TEXT],
    intervalMs: DAY
  },
  {
    source: "nuclei",
    url: "https://raw.githubusercontent.com/projectdiscovery/nuclei-templates/main/cves.json",
    fileName: "cves.json",
    gzip: false,
    contentTypes: ["application/json", ...RAW_TEXT],
    intervalMs: DAY
  }
]

export const catalogueOf = (source: string) => CATALOGUES.find((c) => c.source === source)
