import { Config, Duration, Schema } from "effect"

/**
 * The MCP sessions this process serves, as the gate sees them: which organization opened each,
 * the revision it speaks, and when it was last used. The MCP library keeps a session (with the
 * client's whole `initialize` payload) until a DELETE ends it, and offers neither expiry nor a cap;
 * clients rarely send that DELETE, and any organization could open sessions until the process ran
 * out of memory. The gate ends them instead (src/mcp/McpSessionKeeper.ts): a session idle for longer than
 * `idle` is ended, an organization holds at most `perOrg`, its least recently used ended first, and
 * the process at most `max`, the least recently used of any organization ended first (the
 * per-organization cap times the number of organizations is no bound: administrators create those).
 */
export const McpSessionSettings = Config.all({
  perOrg: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)), "VDB_MCP_SESSIONS_PER_ORG").pipe(
    Config.withDefault(100)
  ),
  // A session keeps its `initialize` (at most 8 KiB, about 20 times that once parsed in the worst
  // case): 2,000 sessions are at most about 330 MB, the SDK's usual ones a few MB.
  max: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)), "VDB_MCP_SESSIONS_MAX").pipe(
    Config.withDefault(2000)
  ),
  // Under a second, a session would end between two requests of one exchange.
  idle: Config.schema(
    Schema.DurationFromString.check(
      Schema.makeFilter((idle: Duration.Duration) => Duration.toMillis(idle) >= 1000 || "at least one second")
    ),
    "VDB_MCP_SESSION_IDLE"
  ).pipe(Config.withDefault(Duration.minutes(30)))
})

export interface McpSession {
  readonly id: string
  readonly orgUuid: string
  /** The revision the session was opened on (its `MCP-Protocol-Version`), which a DELETE must name. */
  readonly protocolVersion: string
  lastUsed: number
}

/**
 * Sessions by id and per organization, both in least-recently-used order (a Map keeps insertion
 * order; a use moves the session to the end). Every operation is O(1) but the sweep.
 */
export class SessionTable {
  private readonly byId = new Map<string, McpSession>()
  private readonly byOrg = new Map<string, Map<string, McpSession>>()

  readonly perOrg: number
  readonly idleMs: number
  readonly max: number

  constructor(perOrg: number, idleMs: number, max = Number.POSITIVE_INFINITY) {
    this.perOrg = perOrg
    this.idleMs = idleMs
    this.max = max
  }

  get size() {
    return this.byId.size
  }

  get(id: string): McpSession | undefined {
    return this.byId.get(id)
  }

  isExpired(session: McpSession, now: number) {
    return now - session.lastUsed > this.idleMs
  }

  touch(session: McpSession, now: number) {
    session.lastUsed = now
    const own = this.byOrg.get(session.orgUuid)
    if (own === undefined) return
    own.delete(session.id)
    own.set(session.id, session)
    this.byId.delete(session.id)
    this.byId.set(session.id, session)
  }

  /**
   * Records a new session; what must be ended to keep its organization and the process within
   * their caps, oldest first.
   */
  add(session: McpSession): ReadonlyArray<McpSession> {
    this.byId.set(session.id, session)
    let own = this.byOrg.get(session.orgUuid)
    if (own === undefined) this.byOrg.set(session.orgUuid, own = new Map())
    own.set(session.id, session)
    const evicted: Array<McpSession> = []
    for (const oldest of own.values()) {
      if (own.size - evicted.length <= this.perOrg) break
      evicted.push(oldest)
    }
    for (const gone of evicted) this.remove(gone)
    for (const oldest of this.byId.values()) {
      if (this.byId.size <= this.max) break
      this.remove(oldest)
      evicted.push(oldest)
    }
    return evicted
  }

  remove(session: McpSession) {
    if (this.byId.get(session.id) !== session) return
    this.byId.delete(session.id)
    const own = this.byOrg.get(session.orgUuid)
    own?.delete(session.id)
    if (own?.size === 0) this.byOrg.delete(session.orgUuid)
  }

  /** Removes and returns the sessions idle for longer than `idleMs`. */
  sweep(now: number): ReadonlyArray<McpSession> {
    const expired: Array<McpSession> = []
    for (const own of this.byOrg.values()) {
      // Least recently used first: the first one still in use ends the organization's scan.
      for (const session of own.values()) {
        if (!this.isExpired(session, now)) break
        expired.push(session)
      }
    }
    for (const session of expired) this.remove(session)
    return expired
  }
}
