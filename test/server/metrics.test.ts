import { execFile, spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type RunningServer, startServer, tempDataDir } from "../support/processes.ts"

/**
 * `GET /metrics` of `bin/vdb serve` (docs/operations.md): the series move with requests, labels
 * carry route templates and never a raw path or a credential, promtool accepts the output, and a
 * real Prometheus (Debian's package; `make prometheus` installs it) scrapes it.
 */
let server: RunningServer
let metricsPort: number

const scrape = async () => {
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
  return response.text()
}

/** The value of one series line (name and exact label text), 0 when absent. */
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

const requestsOf = (service: string, route: string, method: string, statusClass: string) =>
  `vdb_http_request_duration_seconds_count{service="${service}",route="${route}",method="${method}",status_class="${statusClass}"}`

const which = (command: string) =>
  new Promise<boolean>((resolve) => execFile("sh", ["-c", `command -v ${command}`], (error) => resolve(error === null)))

const SECRET = "ApiKey 0b1c2d3e-0000-4000-8000-000000000000:5ecret5ecret5ecret"
const RAW = "raw-path-7f3a9c"

beforeAll(async () => {
  metricsPort = await freePort()
  server = await startServer({ VDB_DATA_DIR: tempDataDir(), VDB_METRICS: "on", VDB_METRICS_PORT: String(metricsPort) })
})

afterAll(async () => {
  await server?.stop()
})

describe("GET /metrics", () => {
  it("counts requests by route template, method and status class, never the raw path or a credential", async () => {
    const before = await scrape()
    const vuln = requestsOf("api", "/v1/vulns/:id", "GET", "4xx")
    const unmatched = requestsOf("api", "unmatched", "GET", "4xx")
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`http://127.0.0.1:${server.ports.api}/v1/vulns/CVE-2021-${RAW}-${i}?key=${RAW}`, {
        headers: { authorization: SECRET }
      })
      expect(response.status).toBe(401)
    }
    expect((await fetch(`http://127.0.0.1:${server.ports.api}/${RAW}/x`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${server.ports.api}/readyz`, { method: "PROPFIND" })).status).toBeGreaterThan(
      0
    )
    const after = await scrape()
    expect(valueOf(after, vuln) - valueOf(before, vuln)).toBe(3)
    expect(valueOf(after, unmatched) - valueOf(before, unmatched)).toBe(1)
    // A method outside the usual set is `other`: a client cannot invent label values.
    expect(after).toContain(`method="other"`)
    expect(after).not.toContain("PROPFIND")
    expect(after).not.toContain(RAW)
    expect(after).not.toContain("5ecret")
    expect(after).not.toMatch(/organization|org_id|orgId/)
    // Each service's requests in flight, and the process series.
    for (const service of ["api", "gateway", "site", "mcp"]) {
      expect(after).toMatch(new RegExp(`^vdb_http_requests_in_flight\\{service="${service}"\\} \\d+$`, "m"))
    }
    for (
      const name of [
        "vdb_process_resident_memory_bytes",
        "vdb_process_heap_used_bytes",
        "vdb_process_event_loop_delay_p99_seconds"
      ]
    ) {
      expect(valueOf(after, name)).toBeGreaterThanOrEqual(0)
      expect(after).toMatch(new RegExp(`^${name} `, "m"))
    }
  })

  it("counts the gateway's requests answered below the router by their route template", async () => {
    const before = await scrape()
    // Answered by the relay listener (src/gateway/RelayListener.ts), below the router.
    const path = "/openai/v1/chat/completions"
    const response = await fetch(`http://127.0.0.1:${server.ports.gateway}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${RAW}` },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: RAW }] })
    })
    const statusClass = `${Math.floor(response.status / 100)}xx`
    await response.arrayBuffer()
    const after = await scrape()
    const counted = after.split("\n").filter((l) =>
      l.startsWith(`vdb_http_request_duration_seconds_count{service="gateway"`)
    )
    const moved = counted.filter((l) => {
      const series = l.slice(0, l.lastIndexOf(" "))
      return valueOf(after, series) > valueOf(before, series)
    })
    expect(moved).toHaveLength(1)
    expect(moved[0]).toContain(`route="/:provider/v1/chat/completions",method="POST",status_class="${statusClass}"`)
    expect(after).not.toContain(RAW)
  })

  it("passes promtool check metrics", async (context) => {
    if (!(await which("promtool"))) {
      console.warn("skipped: promtool not found (Debian's prometheus package; `make prometheus` installs it as root)")
      return context.skip()
    }
    const text = await scrape()
    const result = await new Promise<{ code: number; output: string }>((resolve) => {
      const child = execFile(
        "promtool",
        ["check", "metrics"],
        { timeout: 30_000 },
        (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, output: stdout + stderr })
      )
      child.stdin?.end(text)
    })
    expect(result.output).toBe("")
    expect(result.code).toBe(0)
  })

  it("is scraped by a real Prometheus", async (context) => {
    if (!(await which("prometheus"))) {
      console.warn("skipped: prometheus not found (Debian's prometheus package; `make prometheus` installs it as root)")
      return context.skip()
    }
    const dir = mkdtempSync(join(tmpdir(), "vdb-prometheus-"))
    const webPort = await freePort()
    writeFileSync(
      join(dir, "prometheus.yml"),
      [
        "global:",
        "  scrape_interval: 1s",
        "scrape_configs:",
        "  - job_name: vdb",
        "    static_configs:",
        `      - targets: ["127.0.0.1:${metricsPort}"]`
      ].join("\n")
    )
    const prometheus = spawn("prometheus", [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${webPort}`
    ], { stdio: ["ignore", "ignore", "pipe"] })
    let log = ""
    prometheus.stderr.on("data", (chunk) => (log += chunk))
    try {
      const query = async (promql: string) => {
        const response = await fetch(
          `http://127.0.0.1:${webPort}/api/v1/query?query=${encodeURIComponent(promql)}`
        ).catch(() => undefined)
        if (response?.status !== 200) return []
        const body = await response.json() as {
          data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }
        }
        return body.data.result
      }
      const deadline = Date.now() + 30_000
      let series: Awaited<ReturnType<typeof query>> = []
      while (Date.now() < deadline) {
        series = await query(`vdb_http_request_duration_seconds_count{service="api",route="/v1/vulns/:id"}`)
        if (series.length > 0) break
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
      expect(series.length, log.slice(-2000)).toBeGreaterThan(0)
      expect(Number(series[0]!.value[1])).toBeGreaterThanOrEqual(3)
      const up = await query(`up{job="vdb"}`)
      expect(up.map((s) => s.value[1])).toEqual(["1"])
      expect((await query("vdb_process_resident_memory_bytes")).length).toBe(1)
    } finally {
      prometheus.kill("SIGTERM")
      await new Promise((resolve) => prometheus.once("exit", resolve))
    }
  })
})
