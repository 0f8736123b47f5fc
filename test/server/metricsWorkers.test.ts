import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { freePort, type RunningServer, startServer, tempDataDir } from "../support/processes.ts"

/**
 * `GET /metrics` under `serve --workers 2` (docs/operations.md, "Several processes"): the primary
 * answers every scrape with both workers' series, each labelled `worker`, so requests served by
 * either worker are all counted whichever connection the scrape arrives on.
 */
describe("GET /metrics with --workers 2", () => {
  const scope = Effect.runSync(Scope.make())
  let server: RunningServer
  let metricsPort: number

  beforeAll(async () => {
    const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    metricsPort = await freePort()
    server = await startServer({
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_DATA_DIR: tempDataDir(),
      VDB_LOG_LEVEL: "Warn",
      VDB_WORKERS: "2",
      VDB_METRICS: "on",
      VDB_METRICS_PORT: String(metricsPort)
    }, ["api"])
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  const scrape = async () => {
    const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
    return response.text()
  }

  /** The sum over workers of a series (its name and labels other than `worker`), and the workers seen. */
  const total = (text: string, name: string, labels: string) => {
    const pattern = new RegExp(
      `^${name}\\{${labels.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")},worker="(\\d+)"\\} (\\S+)$`,
      "gm"
    )
    let sum = 0
    const workers = new Set<string>()
    for (const match of text.matchAll(pattern)) {
      workers.add(match[1]!)
      sum += Number(match[2])
    }
    return { sum, workers }
  }

  it("one scrape counts the requests both workers served, and each process's own series", async () => {
    const series = `service="api",route="/v1/vulns/:id",method="GET",status_class="4xx"`
    const before = total(await scrape(), "vdb_http_request_duration_seconds_count", series).sum
    // New connections each time (no keep-alive), so the primary spreads them over both workers.
    const statuses = await Promise.all(
      Array.from(
        { length: 40 },
        (_, i) =>
          fetch(`http://127.0.0.1:${server.ports.api}/v1/vulns/CVE-2021-${i}`, { headers: { connection: "close" } })
            .then(async (response) => {
              await response.arrayBuffer()
              return response.status
            })
      )
    )
    expect(statuses.every((status) => status === 401)).toBe(true)
    for (let scrapeNo = 0; scrapeNo < 4; scrapeNo++) {
      const text = await scrape()
      const after = total(text, "vdb_http_request_duration_seconds_count", series)
      expect(after.sum - before).toBe(40)
      expect(after.workers).toEqual(new Set(["1", "2"]))
      // Per-process series stay per process, one line per worker.
      expect(text.match(/^vdb_process_resident_memory_bytes\{worker="\d+"\} \d+/gm)).toHaveLength(2)
      // One HELP and TYPE per family, as promtool requires.
      expect(text.match(/^# TYPE vdb_http_request_duration_seconds histogram$/gm)).toHaveLength(1)
    }
  })
})
