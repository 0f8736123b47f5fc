import { ConfigProvider, Effect, Result } from "effect"
import { execFile } from "node:child_process"
import { setTimeout as sleep } from "node:timers/promises"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { publicOriginProblem } from "../../src/mcp/McpGate.ts"
import { McpSessionSettings } from "../../src/mcp/McpSessions.ts"
import { runVdb, tempDataDir } from "../support/processes.ts"
import { type McpServerUnderTest, openSession, postMcp, startMcpServer } from "./mcpServer.ts"

/**
 * The MCP service's settings, on a real `bin/vdb serve mcp` with 2 sessions an organization, 4
 * seconds of idleness and a public origin (`VDB_MCP_URL`). The gate bounds the sessions the MCP
 * library holds (src/mcp/McpSessions.ts). A session the gate
 * has ended is forgotten by the gate too, so the next request naming it reaches the MCP library:
 * its 404 there shows the library no longer holds the session (it answers 200 while it does).
 */

const IDLE_SECONDS = 4

let running: McpServerUnderTest
let env: Record<string, string>
let mcpUrl: string

beforeAll(async () => {
  running = await startMcpServer({
    VDB_MCP_SESSIONS_PER_ORG: "2",
    VDB_MCP_SESSION_IDLE: `${IDLE_SECONDS} seconds`,
    VDB_MCP_URL: "https://mcp.vdb.example/"
  })
  ;({ env, mcpUrl } = running)
}, 180_000)

afterAll(async () => {
  await running?.stop()
})

const newOrg = async (name: string): Promise<string> => {
  const run = await runVdb(["org", "create", "--name", name, "--per-minute", "0", "--per-week", "0", "--json"], env)
  expect(run.code, run.stderr).toBe(0)
  return (JSON.parse(run.stdout) as { apiKey: string }).apiKey
}

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }

const post = (apiKey: string, body: unknown, headers: Record<string, string> = {}) =>
  postMcp(mcpUrl, apiKey, body, headers)

type Session = Record<string, string>

const open = (apiKey: string, protocolVersion = "2025-11-25"): Promise<Session> =>
  openSession(mcpUrl, apiKey, protocolVersion, "sessions-test")

/** The status of a ping on `session`, and the error code of a refusal. */
const ping = async (apiKey: string, session: Session) => {
  const response = await post(apiKey, { jsonrpc: "2.0", id: 1, method: "ping" }, session)
  const text = await response.text()
  return {
    status: response.status,
    code: response.status === 200 ? undefined : (JSON.parse(text) as { error: { code: string } }).error.code
  }
}

describe("MCP sessions: at most VDB_MCP_SESSIONS_PER_ORG an organization", () => {
  it("a third session ends the least recently used one, in the MCP library too; other organizations keep theirs", async () => {
    const apiKey = await newOrg("sessions-cap")
    const other = await newOrg("sessions-cap-other")
    const theirs = await open(other)

    const first = await open(apiKey)
    const second = await open(apiKey)
    expect((await ping(apiKey, first)).status).toBe(200) // first is now the more recently used
    const third = await open(apiKey)

    expect(await ping(apiKey, second)).toEqual({ status: 404, code: "not_found" })
    expect((await ping(apiKey, first)).status).toBe(200)
    expect((await ping(apiKey, third)).status).toBe(200)
    expect((await ping(other, theirs)).status).toBe(200)
  })

  it("sessions of the older revisions are ended the same way", async () => {
    const apiKey = await newOrg("sessions-revisions")
    const oldest = await open(apiKey, "2024-11-05")
    await open(apiKey, "2025-03-26")
    await open(apiKey, "2025-06-18")
    expect(await ping(apiKey, oldest)).toEqual({ status: 404, code: "not_found" })
  })

  it("a session is used only by the organization that opened it: another one's id is 404, and the session lives on", async () => {
    const owner = await newOrg("sessions-owner")
    const intruder = await newOrg("sessions-intruder")
    const session = await open(owner)

    expect(await ping(intruder, session)).toEqual({ status: 404, code: "not_found" })
    const end = await fetch(mcpUrl, { method: "DELETE", headers: { authorization: intruder, ...session } })
    expect(end.status).toBe(404)
    expect((await ping(owner, session)).status).toBe(200)
  })
})

describe("VDB_MCP_URL: the service's public origin", () => {
  it("the challenge and the discovery document name it, whatever the Host; an invalid value stops the server", async () => {
    const anonymous = await fetch(mcpUrl, { method: "POST", headers: MCP_HEADERS, body: "{}" })
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get("www-authenticate")).toBe(
      `ApiKey realm="vdb-mcp", resource_metadata="https://mcp.vdb.example/.well-known/oauth-protected-resource"`
    )
    const discovery = await fetch(new URL("/.well-known/oauth-protected-resource", mcpUrl))
    expect(discovery.headers.get("cache-control")).toBe("public, max-age=300")
    expect(((await discovery.json()) as { resource: string }).resource).toBe("https://mcp.vdb.example/mcp")

    // What the server says at start for an invalid value; the other refusals are the same check.
    const refused = await runVdb(["serve", "mcp"], {
      ...env,
      VDB_DATA_DIR: tempDataDir(),
      VDB_MCP_URL: "https://mcp.vdb.example/mcp"
    })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("invalid VDB_MCP_URL: an origin only is expected")
    expect(publicOriginProblem("ftp://mcp.vdb.example")).toContain("an http or https origin is expected")
    expect(publicOriginProblem("mcp.vdb.example")).toContain("not a URL")
    expect(publicOriginProblem("https://user@mcp.vdb.example")).toContain("an origin only is expected")
    expect(publicOriginProblem("http://10.0.0.1:8443/")).toBe(true)
  })
})

describe("MCP sessions: what a session keeps", () => {
  it("an initialize over 8 KiB is 413 and opens no session; other requests may be bigger", async () => {
    const apiKey = await newOrg("sessions-big-initialize")
    const initialize = (padding: number) =>
      post(apiKey, {
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "x".repeat(padding), version: "1" }
        }
      })
    const big = await initialize(10 * 1024)
    expect(big.status).toBe(413)
    expect(big.headers.get("mcp-session-id")).toBeNull()
    expect(await big.json()).toEqual({
      error: { code: "payload_too_large", message: "an initialize request over 8192 bytes" }
    })
    const small = await initialize(6 * 1024)
    expect(small.status).toBe(200)
    await small.text()

    const session = await open(apiKey)
    const bigCall = await post(apiKey, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "get_organization", arguments: {}, _meta: { padding: "x".repeat(70 * 1024) } }
    }, session)
    expect(bigCall.status).toBe(200)
    await bigCall.text()
  })
})

describe("2026-07-28: no subscription streams", () => {
  it("subscriptions/listen is not served: a stream would hold its request open with no bound", async () => {
    const apiKey = await newOrg("sessions-listen")
    const response = await post(apiKey, {
      jsonrpc: "2.0",
      id: 1,
      method: "subscriptions/listen",
      params: {
        notifications: { toolsListChanged: true },
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {},
          "io.modelcontextprotocol/clientInfo": { name: "settings-test", version: "1" }
        }
      }
    }, { "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen" })
    const text = await response.text()
    expect(text).toContain("-32601")
    expect(text).not.toContain("subscriptions/acknowledged")
  })
})

/** One column of the rows a query gives, through psql on the server's own database. */
const column = (query: string) =>
  new Promise<Array<string>>((resolve, reject) =>
    execFile(
      "psql",
      [env.DATABASE_URL!, "-Atc", query],
      (error, stdout) => error ? reject(error) : resolve(stdout.split("\n").filter((l) => l !== ""))
    )
  )

describe("the usage log", () => {
  it("records the status the client got: a notification's 202, not the 200 the MCP server first answers", async () => {
    const created = await runVdb([
      "org",
      "create",
      "--name",
      "sessions-usage",
      "--per-minute",
      "0",
      "--per-week",
      "0",
      "--json"
    ], env)
    const org = JSON.parse(created.stdout) as { uuid: string; apiKey: string }
    await open(org.apiKey) // initialize (200), then notifications/initialized (202)
    let statuses: Array<string> = []
    // The usage log is written in batches: wait for both rows.
    for (let i = 0; i < 100 && statuses.length < 2; i++) {
      statuses = await column(`SELECT status FROM usage_log WHERE org_uuid = '${org.uuid}' ORDER BY id`)
      if (statuses.length < 2) await sleep(100)
    }
    expect(statuses).toEqual(["200", "202"])
  })
})

describe("settings the server refuses", () => {
  it("a session cap under 1 or an idle time under a second stops the server at start", async () => {
    const refused = await runVdb(["serve", "mcp"], {
      ...env,
      VDB_DATA_DIR: tempDataDir(),
      VDB_MCP_SESSIONS_PER_ORG: "0"
    })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("invalid VDB_MCP_SESSIONS_PER_ORG")
    // The same settings read in process, as the server reads them.
    const read = (values: Record<string, string>) =>
      Effect.runSync(Effect.result(McpSessionSettings.parse(ConfigProvider.fromEnvRecord(values))))
    const invalid: Array<Record<string, string>> = [
      { VDB_MCP_SESSIONS_PER_ORG: "-3" },
      { VDB_MCP_SESSIONS_MAX: "0" },
      { VDB_MCP_SESSIONS_MAX: "many" },
      { VDB_MCP_SESSION_IDLE: "0 seconds" },
      { VDB_MCP_SESSION_IDLE: "500 millis" }
    ]
    for (const values of invalid) {
      expect(Result.isFailure(read(values))).toBe(true)
    }
    const defaults = read({})
    expect(Result.isSuccess(defaults) && [defaults.success.perOrg, defaults.success.max]).toEqual([100, 2000])
    expect(Result.isSuccess(read({ VDB_MCP_SESSIONS_PER_ORG: "1", VDB_MCP_SESSION_IDLE: "1 second" }))).toBe(true)
  })
})

describe("MCP sessions: idle for longer than VDB_MCP_SESSION_IDLE", () => {
  it("a session in use lives on; one left idle is ended, whether a request names it again or not", async () => {
    // Both organizations at once: a CLI start costs seconds on a busy machine, and only the idle
    // timing below is under test.
    const [apiKey, other] = await Promise.all([newOrg("sessions-idle"), newOrg("sessions-idle-forgotten")])
    const kept = await open(apiKey)
    const named = await open(apiKey)
    const forgotten = await open(other)

    const idleSince = Date.now()
    // `kept` is used every quarter of the idle time (a slow request under load still leaves it
    // well within it) until the other two have been idle for longer, and the sweep has run since.
    while (Date.now() - idleSince < IDLE_SECONDS * 1000 * 1.5 + 1000) {
      await sleep((IDLE_SECONDS * 1000) / 4)
      expect((await ping(apiKey, kept)).status).toBe(200)
    }
    // An expired session is 404 whether the gate or its sweep ended it; a second request reaches
    // the library, which no longer has it.
    expect(await ping(apiKey, named)).toEqual({ status: 404, code: "not_found" })
    expect(await ping(apiKey, named)).toEqual({ status: 404, code: "not_found" })
    // Nothing named `forgotten` since its initialize: ended all the same (by the sweep; the
    // table's own test shows the sweep's choice).
    expect(await ping(other, forgotten)).toEqual({ status: 404, code: "not_found" })
    expect((await ping(apiKey, kept)).status).toBe(200)
  }, 60_000)
})
