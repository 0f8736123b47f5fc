import { randomBytes, randomUUID } from "node:crypto"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type McpServerUnderTest, postMcp, startMcpServer } from "../mcp/mcpServer.ts"
import { runVdb } from "../support/processes.ts"

/**
 * API-key sign-in is decided once (src/auth/ApiKeyAuth.ts) and answered by each surface in its
 * own dialect. On a real `bin/vdb serve api mcp`: the cached `/v1/vuln` fast path, another `/v1`
 * route (the HttpApi) and MCP reach the same outcome for the same credential and organization.
 */

const CVE = "CVE-2021-44228"
const FIXTURE = fileURLToPath(new URL(`../fixtures/data/sources/mitre/${CVE}.json`, import.meta.url))

interface Outcome {
  readonly status: number
  readonly headers: Headers
}

let running: McpServerUnderTest | undefined
let api: string

const vdb = async (args: ReadonlyArray<string>) => {
  const run = await runVdb(args, running!.env)
  expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0)
  return run.stdout
}

const newOrg = async (name: string, perWeek = 0): Promise<{ uuid: string; apiKey: string }> =>
  JSON.parse(await vdb(["org", "create", "--name", name, "--per-minute", "0", "--per-week", String(perWeek), "--json"]))

const answered = async (response: Response): Promise<Outcome> => {
  await response.arrayBuffer()
  return { status: response.status, headers: response.headers }
}

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "agree", version: "1" } }
}

/** The same credential on the three surfaces, one after the other. */
const onEverySurface = async (authorization: string) => ({
  fastPath: await answered(await fetch(`${api}/v1/vuln/${CVE}`, { headers: { authorization } })),
  httpApi: await answered(await fetch(`${api}/v1/exploits/${CVE}`, { headers: { authorization } })),
  mcp: await answered(await postMcp(running!.mcpUrl, authorization, initialize))
})

const statuses = (outcomes: Record<string, Outcome>) =>
  Object.fromEntries(Object.entries(outcomes).map(([surface, o]) => [surface, o.status]))

beforeAll(async () => {
  running = await startMcpServer({}, ["api", "mcp"])
  api = `http://127.0.0.1:${running.server.ports.api}`
  const ingested = await runVdb(["ingest", "mitre", FIXTURE, "--json"], running.env)
  expect(ingested.code, ingested.stderr).toBe(0)
}, 180_000)

afterAll(async () => {
  await running?.stop()
})

describe("API-key sign-in: the /v1/vuln fast path, another /v1 route and MCP agree", () => {
  it(
    "a valid key of an active organization is let in everywhere; a wrong secret, an unknown organization and a malformed key are 401 everywhere",
    async () => {
      const org = await newOrg("agree-keys")
      // The first answer fills the response cache, so the next `/vuln` requests meet the fast path.
      expect(statuses(await onEverySurface(org.apiKey))).toEqual({ fastPath: 200, httpApi: 200, mcp: 200 })
      expect(statuses(await onEverySurface(org.apiKey))).toEqual({ fastPath: 200, httpApi: 200, mcp: 200 })

      const refused = [
        `ApiKey ${org.uuid}:${randomBytes(32).toString("hex")}`,
        `ApiKey ${randomUUID()}:${randomBytes(32).toString("hex")}`,
        `ApiKey ${org.uuid}`
      ]
      for (const authorization of refused) {
        const outcomes = await onEverySurface(authorization)
        expect(statuses(outcomes), authorization).toEqual({ fastPath: 401, httpApi: 401, mcp: 401 })
        for (const outcome of Object.values(outcomes)) {
          expect(outcome.headers.get("www-authenticate")).toMatch(/^ApiKey realm=/)
        }
      }
    },
    60_000
  )

  it("the scheme is case-insensitive everywhere (RFC 9110 §11.1): `apikey` and `APIKEY` are `ApiKey`", async () => {
    const org = await newOrg("agree-scheme-case")
    const digest = org.apiKey.slice("ApiKey ".length)
    for (const scheme of ["apikey", "APIKEY"]) {
      expect(statuses(await onEverySurface(`${scheme} ${digest}`)), scheme).toEqual({
        fastPath: 200,
        httpApi: 200,
        mcp: 200
      })
    }
  }, 60_000)

  it(
    "a deactivated organization is 403 everywhere, with its counters; active again, it is let in everywhere",
    async () => {
      const org = await newOrg("agree-inactive", 100)
      expect(statuses(await onEverySurface(org.apiKey))).toEqual({ fastPath: 200, httpApi: 200, mcp: 200 })
      await vdb(["org", "deactivate", org.uuid])
      const outcomes = await onEverySurface(org.apiKey)
      expect(statuses(outcomes)).toEqual({ fastPath: 403, httpApi: 403, mcp: 403 })
      // Not counted: the three admitted requests above, nothing since.
      for (const outcome of Object.values(outcomes)) {
        expect(outcome.headers.get("x-ratelimit-remaining-week")).toBe(
          "97"
        )
      }
      await vdb(["org", "activate", org.uuid])
      expect(statuses(await onEverySurface(org.apiKey))).toEqual({ fastPath: 200, httpApi: 200, mcp: 200 })
    },
    60_000
  )

  it("an exhausted limit is 429 with Retry-After everywhere, and the refusals are not counted", async () => {
    const org = await newOrg("agree-limited", 3)
    expect(statuses(await onEverySurface(org.apiKey))).toEqual({ fastPath: 200, httpApi: 200, mcp: 200 })
    const outcomes = await onEverySurface(org.apiKey)
    expect(statuses(outcomes)).toEqual({ fastPath: 429, httpApi: 429, mcp: 429 })
    for (const outcome of Object.values(outcomes)) {
      expect(Number(outcome.headers.get("retry-after"))).toBeGreaterThan(0)
      expect(outcome.headers.get("x-ratelimit-remaining-week")).toBe("0")
    }
    // Room for one more: whichever surface asks first gets it, and the refusals above used none.
    await vdb(["org", "limits", org.uuid, "--per-minute", "0", "--per-week", "4"])
    expect(statuses(await onEverySurface(org.apiKey))).toEqual({ fastPath: 200, httpApi: 429, mcp: 429 })
  }, 60_000)
})
