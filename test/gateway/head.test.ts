import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * HEAD on the gateway port, as `bin/vdb serve` mounts it: the gateway's and the management API's
 * catch-alls used to take HEAD too, so every HEAD got their answer (a 405 whose `Allow` named HEAD,
 * a health probe's 404) instead of the GET route's headers.
 */
let server: RunningServer
let apiKey: string
const head = (path: string, headers: Record<string, string> = {}) =>
  fetch(`http://127.0.0.1:${server.ports.gateway}${path}`, { method: "HEAD", headers })

beforeAll(async () => {
  const env = { VDB_DATA_DIR: tempDataDir(), VDB_LOG_LEVEL: "Warn" }
  server = await startServer(env, ["gateway"])
  const created = await runVdb(
    ["org", "create", "--name", "head", "--per-minute", "0", "--per-week", "0", "--json"],
    env
  )
  expect(created.code, created.stderr).toBe(0)
  apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey
}, 120_000)

afterAll(async () => {
  await server?.stop()
})

describe("HEAD on the gateway port", () => {
  it("is the GET route's answer without a body: health, both OpenAPI documents, a management listing", async () => {
    for (const path of ["/healthz", "/readyz", "/openapi.json", "/manage/v1/openapi.json"]) {
      const reply = await head(path)
      expect(reply.status, path).toBe(200)
      expect(await reply.text(), path).toBe("")
    }
    const listing = await head("/manage/v1/guardrails", { authorization: apiKey })
    expect(listing.status).toBe(200)
    expect(listing.headers.get("content-type")).toMatch(/^application\/json/)
    expect((await head("/manage/v1/guardrails")).status).toBe(401)
  })

  it("a path no GET route takes is still the dialect's 404, and other methods still the 405 naming GET and HEAD", async () => {
    expect((await head("/nosuch")).status).toBe(404)
    expect((await head("/manage/v1/nosuch", { authorization: apiKey })).status).toBe(404)
    const put = await fetch(`http://127.0.0.1:${server.ports.gateway}/manage/v1/openapi.json`, { method: "PUT" })
    expect(put.status).toBe(405)
    expect(put.headers.get("allow")).toBe("GET, HEAD")
  })
})
