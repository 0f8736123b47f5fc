/** One served request, as the usage log stores it. */
export interface UsageEntry {
  /** Null when no organization was identified (e.g. 401). */
  readonly orgUuid: string | null
  readonly method: string
  /** The route template, e.g. `/v1/vuln/:identifier`. */
  readonly route: string
  readonly identifier: string | null
  readonly status: number
  readonly latencyMs: number
  readonly clientAddress: string | null
  readonly userAgent: string | null
  readonly at: Date
}

export interface UsageFilter {
  readonly orgUuid?: string | undefined
  readonly since?: Date | undefined
}

export interface UsageRow {
  readonly orgUuid: string | null
  readonly route: string
  readonly requests: number
  readonly errors: number
  readonly rateLimited: number
  readonly avgLatencyMs: number
  readonly p99LatencyMs: number
  readonly lastAt: string
}

export interface UsageSummary {
  readonly rows: ReadonlyArray<UsageRow>
  /** Entries lost: refused because the in-process queue was full, or by the database (all processes, all time). */
  readonly dropped: number
}
