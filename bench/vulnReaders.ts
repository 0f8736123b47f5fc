/**
 * The benchmarks' readers of `GET /v1/vuln/{id}`: N keep-alive loops in a
 * process of their own (forked from this module), paced at R requests a
 * second in all, measuring latency while something else loads the server
 * (an ingest, a sync). `forkReaders` starts them; its `stop()` returns their
 * figures.
 */
import { Context, Effect, Layer } from "effect"
import { fork } from "node:child_process"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Organizations } from "../src/orgs/Organizations.ts"
import { MasterKey } from "../src/secrets/MasterKey.ts"
import { SecretBox } from "../src/secrets/SecretBox.ts"
import { type HttpConnection, httpConnection, requestBytes } from "./httpClient.ts"

export interface ReaderStats {
  readonly concurrency: number
  readonly targetRate: number
  readonly requests: number
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly errors: number
}

/**
 * The reader process: N loops of `GET /v1/vuln/{id}` until the parent says stop, each on its own
 * keep-alive connection through the benchmarks' lean client (`httpClient.ts`): `fetch` cost the
 * readers' process about 1.3 ms of CPU a request, taken from the two cores the ingest runs on.
 */
const runReaders = (port: number, apiKey: string, idsFile: string, concurrency: number, rate: number) => {
  const ids = JSON.parse(readFileSync(idsFile, "utf8")) as Array<string>
  const latencies: Array<number> = []
  let errors = 0
  let running = true
  const started = performance.now()
  // The same request a `fetch` sends (`Accept-Encoding: gzip, deflate`), so the server does the same work.
  const requests = ids.map((id) => requestBytes(port, `/v1/vuln/${id}`, apiKey, { "Accept-Encoding": "gzip, deflate" }))
  const loops = Array.from({ length: concurrency }, async (_, worker) => {
    let connection: HttpConnection | undefined
    // Paced: each loop starts a request every `concurrency / rate` seconds, whatever the last one took.
    const interval = rate > 0 ? (concurrency / rate) * 1000 : 0
    let next = performance.now() + (interval * worker) / concurrency
    for (let i = worker; running; i += concurrency) {
      if (interval > 0) {
        const wait = next - performance.now()
        next += interval
        if (wait > 0) await new Promise((r) => setTimeout(r, wait))
        if (!running) break
      }
      const start = performance.now()
      connection ??= await httpConnection(port).catch(() => undefined)
      const status = connection === undefined ? 0 : await connection.get(requests[i % ids.length]!)
      if (status !== 200) {
        errors++
        connection?.close()
        connection = undefined
      }
      latencies.push(performance.now() - start)
    }
  })
  process.on("message", async (message) => {
    if (message !== "stop") return
    running = false
    await Promise.all(loops)
    const seconds = (performance.now() - started) / 1000
    const sorted = latencies.sort((a, b) => a - b)
    const at = (p: number) =>
      Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0) * 100) / 100
    const stats: ReaderStats = {
      concurrency,
      targetRate: rate,
      requests: sorted.length,
      perSecond: Math.round(sorted.length / seconds),
      p50: at(0.5),
      p99: at(0.99),
      max: Math.round((sorted.at(-1) ?? 0) * 100) / 100,
      errors
    }
    process.send!(stats, () => process.exit(0))
  })
  process.send!("started")
}

/** A master key for the bench's server and an organization with limits 0 (its API key) in the database at hand. */
export const readerOrganization = Effect.gen(function*() {
  const masterKey = new Uint8Array(randomBytes(32))
  const Box = SecretBox.layer.pipe(Layer.provide(Layer.succeed(MasterKey, MasterKey.fromBytes(masterKey))))
  const orgs = Context.get(yield* Layer.build(Organizations.layer.pipe(Layer.provide(Box))), Organizations)
  const org = yield* orgs.create({ name: "bench-readers", perMinute: 0, perWeek: 0 })
  return { masterKey, org }
})

/** The reader process on `port`, once it is running; `stop()` ends it and gives its figures. */
export const forkReaders = async (port: number, apiKey: string, idsFile: string, concurrency: number, rate: number) => {
  const readers = fork(fileURLToPath(import.meta.url), [
    "--role=readers",
    String(port),
    apiKey,
    idsFile,
    String(concurrency),
    String(rate)
  ], { stdio: "inherit" })
  await new Promise<void>((r) => readers.once("message", () => r()))
  return {
    stop: () =>
      new Promise<ReaderStats>((resolveStats) => {
        readers.once("message", (stats) => resolveStats(stats as ReaderStats))
        readers.send("stop")
      })
  }
}

const role = process.argv.indexOf("--role=readers")
if (role !== -1) {
  const [port, apiKey, idsFile, concurrency, rate] = process.argv.slice(role + 1)
  runReaders(Number(port), apiKey!, idsFile!, Number(concurrency), Number(rate))
}
