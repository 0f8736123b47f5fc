import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, runVdb } from "../support/processes.ts"
import { MCP_HEADERS, type McpServerUnderTest, openSession, postMcp, startMcpServer } from "./mcpServer.ts"

/**
 * The HTTP gate in front of `/mcp` (src/mcp/McpGate.ts) on a real `bin/vdb serve mcp`: what a POST
 * costs against the organization's limits, ending sessions with DELETE, which Host a response may
 * name, and the bodies of the MCP server's own HTTP refusals.
 */

interface Credentials {
  readonly uuid: string
  readonly apiKey: string
}

let server: RunningServer
let env: Record<string, string>
let mcpUrl: string

const vdb = async (args: ReadonlyArray<string>) => {
  const run = await runVdb(args, env)
  expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0)
  return run.stdout
}

const newOrg = async (name: string): Promise<Credentials> =>
  JSON.parse(await vdb(["org", "create", "--name", name, "--per-minute", "0", "--per-week", "0", "--json"]))

const post = (apiKey: string, body: unknown, headers: Record<string, string> = {}) =>
  postMcp(mcpUrl, apiKey, body, headers)

/** A raw session on `protocolVersion`: the headers its later requests carry. */
const initialize = (apiKey: string, protocolVersion: string) =>
  openSession(mcpUrl, apiKey, protocolVersion, "gate-test")

const toolCall = (id: number) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "get_organization", arguments: {} }
})
const batchOf = (n: number) => Array.from({ length: n }, (_, i) => toolCall(i + 1))

/** Node's client, because fetch will not send a Host of its own choosing. */
const withHost = (method: string, path: string, host: string) =>
  new Promise<{ status: number; headers: Record<string, string | Array<string> | undefined>; body: string }>(
    (resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port: server.ports.mcp, method, path, headers: { host } }, (res) => {
        let body = ""
        res.setEncoding("utf8")
        res.on("data", (chunk) => (body += chunk))
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }))
      })
      req.on("error", reject)
      req.end()
    }
  )

let running: McpServerUnderTest | undefined

beforeAll(async () => {
  running = await startMcpServer()
  ;({ env, mcpUrl, server } = running)
}, 180_000)

afterAll(async () => {
  await running?.stop()
})

describe("MCP gate: a POST costs one unit per JSON-RPC request", () => {
  /**
   * A `2025-03-26` session (the revision that takes batches) of a new organization limited to 3 a
   * minute and 10 a week. It is opened while the organization is unlimited (limits 0 count
   * nothing), so both windows start empty.
   */
  const limitedSession = async (name: string) => {
    const org = await newOrg(name)
    const session = await initialize(org.apiKey, "2025-03-26")
    await vdb(["org", "limits", org.uuid, "--per-minute", "3", "--per-week", "10"])
    return { org, session }
  }

  it("limit 3: a batch of 4 is refused and counts nothing, a batch of 3 is admitted and uses the minute", async () => {
    const { org, session } = await limitedSession("gate-batches")

    const four = await post(org.apiKey, batchOf(4), session)
    expect(four.status).toBe(429)
    expect(((await four.json()) as { error: { code: string } }).error.code).toBe("rate_limited")
    expect(four.headers.get("x-ratelimit-remaining-week")).toBe("10")

    const three = await post(org.apiKey, batchOf(3), session)
    expect(three.status).toBe(200)
    expect(three.headers.get("x-ratelimit-remaining-minute")).toBe("0")
    expect(three.headers.get("x-ratelimit-remaining-week")).toBe("7")
    const answered = JSON.parse(await three.text()) as Array<{ id: number; result?: unknown }>
    expect(answered.map((m) => m.id).sort()).toEqual([1, 2, 3])
    expect(answered.every((m) => m.result !== undefined)).toBe(true)
  })

  it("a refused batch costs one unit, not one per request in it", async () => {
    const { org, session } = await limitedSession("gate-refused-batch")
    // Five requests, two with one id: counted per request it would be 429 (limit 3); refused, it is one POST.
    const refused = await post(org.apiKey, [...batchOf(4), toolCall(1)], session)
    expect(refused.status).toBe(400)
    expect(refused.headers.get("x-ratelimit-remaining-minute")).toBe("2")
  })

  it("a single request costs 1, and a batch's notifications cost nothing", async () => {
    const { org, session } = await limitedSession("gate-single")

    const single = await post(org.apiKey, toolCall(1), session)
    expect(single.status).toBe(200)
    await single.text()
    expect(single.headers.get("x-ratelimit-remaining-minute")).toBe("2")
    expect(single.headers.get("x-ratelimit-remaining-week")).toBe("9")

    const mixed = await post(
      org.apiKey,
      [toolCall(2), { jsonrpc: "2.0", method: "notifications/roots/list_changed" }],
      session
    )
    expect(mixed.status).toBe(200)
    await mixed.text()
    expect(mixed.headers.get("x-ratelimit-remaining-week")).toBe("8")
  })
})

describe("MCP gate: DELETE ends a session", () => {
  it("the SDK's terminateSession frees the session (404 after), without costing a unit", async () => {
    const org = await newOrg("gate-sessions")
    const client = new Client({ name: "gate-test", version: "1.0.0" })
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { authorization: org.apiKey } }
    })
    await client.connect(transport)
    const sessionId = transport.sessionId!
    expect(sessionId).toBeTruthy()
    await vdb(["org", "limits", org.uuid, "--per-minute", "0", "--per-week", "10"])

    await transport.terminateSession()
    const after = await post(org.apiKey, toolCall(1), {
      "mcp-session-id": sessionId,
      "mcp-protocol-version": transport.protocolVersion!
    })
    expect(after.status).toBe(404)
    expect(await after.json()).toEqual({
      error: { code: "not_found", message: "unknown or ended MCP session: initialize a new one" }
    })
    // The refused call cost 1 of the 10; the DELETE before it none.
    expect(after.headers.get("x-ratelimit-remaining-week")).toBe("9")
    await client.close()
  })

  it("DELETE needs the same credentials as POST; GET is 405 Allow: POST, DELETE", async () => {
    const session = { "mcp-session-id": "unknown", "mcp-protocol-version": "2025-11-25" }
    const anonymous = await fetch(mcpUrl, { method: "DELETE", headers: session })
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get("www-authenticate")).toContain("/.well-known/oauth-protected-resource")

    const inactive = await newOrg("gate-inactive")
    await vdb(["org", "deactivate", inactive.uuid])
    expect((await fetch(mcpUrl, { method: "DELETE", headers: { authorization: inactive.apiKey, ...session } })).status)
      .toBe(403)

    const org = await newOrg("gate-delete")
    const unknown = await fetch(mcpUrl, { method: "DELETE", headers: { authorization: org.apiKey, ...session } })
    expect(unknown.status).toBe(404)

    const get = await fetch(mcpUrl, { headers: { authorization: org.apiKey } })
    expect(get.status).toBe(405)
    expect(get.headers.get("allow")).toBe("POST, DELETE")
    expect(await get.json()).toEqual({
      error: { code: "method_not_allowed", message: "method GET not allowed: use POST, DELETE" }
    })
  })
})

describe("MCP gate: the Host a response names", () => {
  const discovery = "/.well-known/oauth-protected-resource"

  it("an invalid Host is not echoed into the challenge; the service's own address is", async () => {
    for (const host of [`evil.example"x`, "evil.example/x", "user@evil.example", "evil.example:80x"]) {
      const response = await withHost("POST", "/mcp", host)
      expect(response.status, host).toBe(401)
      expect(response.headers["www-authenticate"], host)
        .toBe(`ApiKey realm="vdb-mcp", resource_metadata="http://127.0.0.1:${server.ports.mcp}${discovery}"`)
    }
    const named = await withHost("POST", "/mcp", "mcp.example.com:8443")
    expect(named.headers["www-authenticate"]).toBe(
      `ApiKey realm="vdb-mcp", resource_metadata="http://mcp.example.com:8443${discovery}"`
    )
  })

  it("the discovery document: a valid Host is named and publicly cacheable per Host; an invalid one is neither", async () => {
    const valid = await withHost("GET", discovery, "mcp.example.com")
    expect(valid.status).toBe(200)
    expect((JSON.parse(valid.body) as { resource: string }).resource).toBe("http://mcp.example.com/mcp")
    expect(valid.headers["cache-control"]).toBe("public, max-age=300")
    expect(valid.headers.vary).toBe("host")

    const ipv6 = await withHost("GET", discovery, "[::1]:8083")
    expect((JSON.parse(ipv6.body) as { resource: string }).resource).toBe("http://[::1]:8083/mcp")

    const invalid = await withHost("GET", discovery, `evil.example"x`)
    expect(invalid.status).toBe(200)
    expect((JSON.parse(invalid.body) as { resource: string }).resource).toBe(`http://127.0.0.1:${server.ports.mcp}/mcp`)
    expect(invalid.headers["cache-control"]).toBe("private, no-store")
    expect(invalid.headers.vary).toBe("host")
  })
})

describe("MCP gate: the MCP server's bare HTTP refusals get an error body", () => {
  it("406 not_acceptable, 415 unsupported_media_type, 403 forbidden, 400 bad_request, their headers kept", async () => {
    const org = await newOrg("gate-errors")
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" }

    const accept = await post(org.apiKey, ping, { accept: "application/json" })
    expect(accept.status).toBe(406)
    expect(accept.headers.get("content-type")).toContain("application/json")
    expect(accept.headers.get("x-ratelimit-limit-minute")).toBe("0")
    expect(await accept.json()).toEqual({
      error: { code: "not_acceptable", message: "send Accept: application/json, text/event-stream" }
    })

    const media = await post(org.apiKey, ping, { "content-type": "text/plain" })
    expect(media.status).toBe(415)
    expect(await media.json()).toEqual({
      error: { code: "unsupported_media_type", message: "send Content-Type: application/json" }
    })

    const browser = await post(org.apiKey, ping, { origin: "https://evil.example" })
    expect(browser.status).toBe(403)
    expect(((await browser.json()) as { error: { code: string } }).error.code).toBe("forbidden")

    // Batches are a 2025-03-26 feature: on a 2025-11-25 session the MCP server refuses one bare.
    const session = await initialize(org.apiKey, "2025-11-25")
    const batch = await post(org.apiKey, batchOf(2), session)
    expect(batch.status).toBe(400)
    expect(((await batch.json()) as { error: { code: string } }).error.code).toBe("bad_request")

    const noSession = await fetch(mcpUrl, { method: "DELETE", headers: { authorization: org.apiKey } })
    expect(noSession.status).toBe(400)
    expect(await noSession.json()).toEqual({
      error: { code: "bad_request", message: "send the Mcp-Session-Id of the session to end" }
    })
  })
})

describe("MCP gate: the MCP server's JSON-RPC refusals of a message", () => {
  /** A POST of `text` as it is (postMcp sends JSON). */
  const postText = (apiKey: string, text: string, headers: Record<string, string> = {}) =>
    fetch(mcpUrl, { method: "POST", headers: { authorization: apiKey, ...MCP_HEADERS, ...headers }, body: text })

  it("not JSON is 400 -32700 and not JSON-RPC 400 -32600, in the JSON-RPC form with no library tag; a handler's error stays 200", async () => {
    const org = await newOrg("gate-jsonrpc")
    const session = await initialize(org.apiKey, "2025-06-18")

    for (const headers of [{}, session]) {
      const notJson = await postText(org.apiKey, "{not json", headers)
      expect(notJson.status).toBe(400)
      expect(notJson.headers.get("x-ratelimit-limit-minute")).toBe("0")
      expect(await notJson.json()).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32700, message: "Parse error" }
      })

      const noMethod = await post(org.apiKey, { jsonrpc: "2.0", id: 7 }, headers)
      expect(noMethod.status).toBe(400)
      expect(await noMethod.json()).toEqual({
        jsonrpc: "2.0",
        id: 7,
        error: { code: -32600, message: "Invalid Request" }
      })
    }

    // Refusals that were already an HTTP error keep their status, without the tag.
    const noSession = await post(org.apiKey, toolCall(8))
    expect(noSession.status).toBe(400)
    const refused = (await noSession.json()) as { id: number; error: Record<string, unknown> }
    expect(refused.id).toBe(8)
    expect(refused.error.code).toBe(-32600)
    expect(refused.error).not.toHaveProperty("_tag")

    const unknown = await post(org.apiKey, { jsonrpc: "2.0", id: 9, method: "no/such/method" }, session)
    expect(unknown.status).toBe(200)
    expect(await unknown.json()).toEqual({
      jsonrpc: "2.0",
      id: 9,
      error: { code: -32601, message: "Method not found: no/such/method" }
    })

    // However long the id the refusal quotes (a 1 KiB cap on what was read let the tag and the 200 through).
    const longId = "a".repeat(1100)
    const long = await post(org.apiKey, { jsonrpc: "2.0", id: longId }, session)
    expect(long.status).toBe(400)
    expect(await long.json()).toEqual({
      jsonrpc: "2.0",
      id: longId,
      error: { code: -32600, message: "Invalid Request" }
    })
  })

  it("a batch holding something other than messages, or more than 1,000, is 400 -32600 (the library answered an empty 200 or 500, or dropped them)", async () => {
    const org = await newOrg("gate-batches")
    const session = await initialize(org.apiKey, "2025-03-26")
    const notMessages = [
      [5],
      [null],
      ["x"],
      [[toolCall(1)]],
      [toolCall(1), 2],
      // Objects, but no JSON-RPC 2.0 message: the library served the rest and dropped these without a word.
      [{ a: 1 }, toolCall(2)],
      [{ ...toolCall(3), jsonrpc: "1.0" }],
      [{ jsonrpc: "2.0", id: 4 }],
      [{ jsonrpc: "2.0", id: 5, result: {}, error: {} }],
      [toolCall(6), { jsonrpc: "2.0", id: { a: 1 }, method: "ping" }],
      [{ jsonrpc: "2.0", id: 9, method: 5 }]
    ]
    for (const batch of notMessages) {
      const refused = await post(org.apiKey, batch, session)
      expect(refused.status, JSON.stringify(batch)).toBe(400)
      expect(await refused.json()).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32600,
          message: "Invalid Request: every element of a batch must be a JSON-RPC 2.0 request, notification or response"
        }
      })
    }
    const notifications = Array.from(
      { length: 4001 },
      () => ({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } })
    )
    const big = await post(org.apiKey, notifications, session)
    expect(big.status).toBe(400)
    expect(((await big.json()) as { error: { message: string } }).error.message).toBe(
      "Invalid Request: a batch holds at most 1000 messages"
    )
    // Two requests with one id got one answer, or an empty 503 from the library.
    for (const batch of [[toolCall(7), toolCall(7)], [toolCall(8), { jsonrpc: "2.0", id: 8, method: "ping" }]]) {
      const same = await post(org.apiKey, batch, session)
      expect(same.status).toBe(400)
      expect(((await same.json()) as { error: { message: string } }).error.message).toBe(
        "Invalid Request: the requests of a batch need distinct ids"
      )
    }
    // A batch of messages is served as before.
    const served = await post(org.apiKey, batchOf(2), session)
    expect(served.status).toBe(200)
    expect((await served.json()) as Array<unknown>).toHaveLength(2)
  })
})
