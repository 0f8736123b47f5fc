import { Clock, Duration, Effect, Schedule } from "effect"
import { HttpEffect, HttpRouter, HttpServerRequest } from "effect/http"
import { MCP_PATH } from "./McpAddress.ts"
import { type McpSession, McpSessionSettings, SessionTable } from "./McpSessions.ts"

/**
 * The gate's hold on the sessions the MCP library keeps (src/mcp/McpSessions.ts): a session is
 * used only by the organization that opened it (another one's id is 404, as an unknown one), one
 * idle for longer than `VDB_MCP_SESSION_IDLE` is ended (404, so the client initializes again, as the
 * MCP specification has it), and an organization's sessions past `VDB_MCP_SESSIONS_PER_ORG`, or the
 * process's past `VDB_MCP_SESSIONS_MAX`, are ended least recently used first. Abandoned sessions
 * are swept for the life of the scope.
 */
export const makeSessionKeeper = Effect.gen(function*() {
  const router = yield* HttpRouter.HttpRouter
  const settings = yield* McpSessionSettings
  const sessions = new SessionTable(settings.perOrg, Duration.toMillis(settings.idle), settings.max)
  // The DELETEs the keeper itself sends: request objects made here, which no client can present.
  const ownRequests = new WeakSet<HttpServerRequest.HttpServerRequest>()

  /**
   * Ends a session in the MCP library the one way it offers: its own DELETE, which the process sends
   * to its router (the library keeps its sessions to itself). In a fiber of its own, because routing
   * a request replaces the running fiber's request context.
   */
  const end = (session: McpSession) =>
    Effect.suspend(() => {
      // The router reads the path only: a fixed URL, whatever VDB_HOST holds (a zone-scoped IPv6
      // address is no URL host).
      const request = HttpServerRequest.fromWeb(
        new Request(`http://localhost${MCP_PATH}`, {
          method: "DELETE",
          headers: { "mcp-session-id": session.id, "mcp-protocol-version": session.protocolVersion }
        })
      )
      ownRequests.add(request)
      return router.asHttpEffect().pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, request),
        Effect.scoped,
        Effect.ignoreCause({ log: "Warn" }),
        Effect.forkDetach,
        Effect.asVoid
      )
    }).pipe(Effect.catchDefect((defect) => Effect.logWarning("mcp: a session could not be ended", defect)))
  const endAll = (ended: ReadonlyArray<McpSession>) => Effect.forEach(ended, end, { discard: true })

  // Abandoned sessions are ended even if no request names them again.
  const sweepEvery = Duration.millis(Math.min(60_000, Math.max(1_000, sessions.idleMs / 2)))
  yield* Clock.currentTimeMillis.pipe(
    Effect.flatMap((now) => endAll(sessions.sweep(now))),
    // One failed sweep must not end the sweeping.
    Effect.catchCause((cause) => Effect.logWarning("mcp: the session sweep failed", cause)),
    Effect.repeat(Schedule.spaced(sweepEvery)),
    Effect.forkScoped
  )

  /** Records the session an `initialize` opened (the library names it in a pre-response handler). */
  const recordOpened = (orgUuid: string) =>
    HttpEffect.appendPreResponseHandler((_request, response) =>
      Effect.gen(function*() {
        const id = response.headers["mcp-session-id"]
        if (id === undefined || sessions.get(id) !== undefined) return response
        const now = yield* Clock.currentTimeMillis
        const protocolVersion = response.headers["mcp-protocol-version"] ?? ""
        yield* endAll(sessions.add({ id, orgUuid, protocolVersion, lastUsed: now }))
        return response
      })
    )

  /** The session a request names: `unknown` for another organization's or an expired one; else it is used now. */
  const use = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, orgUuid: string) {
    const id = request.headers["mcp-session-id"]
    const session = id === undefined ? undefined : sessions.get(id)
    if (session === undefined) return { session, unknown: false }
    if (session.orgUuid !== orgUuid) return { session: undefined, unknown: true }
    const now = yield* Clock.currentTimeMillis
    if (sessions.isExpired(session, now)) {
      sessions.remove(session)
      yield* end(session)
      return { session: undefined, unknown: true }
    }
    sessions.touch(session, now)
    return { session, unknown: false }
  })

  return {
    /** Whether a request is one of the keeper's own DELETEs, which pass the gate as they are. */
    isOwn: (request: HttpServerRequest.HttpServerRequest) => ownRequests.has(request),
    recordOpened,
    use,
    /** A session a DELETE has ended. */
    ended: (session: McpSession) => sessions.remove(session)
  }
})
