/** One CVE's EPSS score as FIRST publishes it (the store's vocabulary; a leaf so the record modules share it). */
export interface EpssScore {
  readonly cve: string
  readonly score: number
  readonly percentile: number
  readonly date: string
  readonly modelVersion: string
}
