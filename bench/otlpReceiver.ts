import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/**
 * `BENCH_TRACING=RATIO` (e.g. 0.1): the server under test exports spans over OTLP/HTTP to a
 * loopback receiver here, sampling root spans at RATIO (`parentbased_traceidratio`, the setting an
 * operator would use). The receiver reads and drops each export and counts them, so the figures
 * include the export's cost in the server and a report can show spans did leave. Without the
 * variable, no receiver and no `OTEL_*` setting: tracing off.
 */
export const benchTracing = async (setting: string | undefined = process.env.BENCH_TRACING): Promise<
  {
    readonly ratio: number
    readonly env: Record<string, string>
    stats(): { exports: number; bytes: number }
    close(): Promise<void>
  } | undefined
> => {
  if (setting === undefined || setting === "" || setting === "0") return undefined
  const ratio = Number(setting)
  if (!(ratio > 0 && ratio <= 1)) throw new Error(`tracing: "${setting}" is not a sampling ratio in (0, 1]`)
  let exports = 0
  let bytes = 0
  const server = createServer((request, response) => {
    request.on("data", (chunk: Buffer) => (bytes += chunk.length))
    request.on("end", () => {
      exports++
      response.writeHead(200, { "content-type": "application/x-protobuf" }).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    ratio,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: String(ratio),
      OTEL_SERVICE_NAME: "vdb-bench"
    },
    stats: () => ({ exports, bytes }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
