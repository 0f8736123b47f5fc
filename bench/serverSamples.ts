/**
 * What a bench's server was doing while it was measured, from its own `/metrics` (scraped every
 * `everyMs`) and /proc: the event loop's delay (the monitor's window restarts at each scrape, so
 * each sample is the longest stall since the one before), the database pool's connections in use
 * and statements waiting for one, the V8 heap, memory outside it, and the resident set. Tells a
 * reader's slow request apart: a stalled event loop (CPU on the main thread, GC) or a wait for the
 * pool. `stop()` gives the summary and every sample.
 */
import { readFileSync } from "node:fs"

export interface ServerSample {
  /** Seconds since the sampler started. */
  readonly t: number
  readonly loopMaxMs: number
  readonly loopP99Ms: number
  readonly poolInUse: number
  readonly poolWaiting: number
  readonly heapUsedMiB: number
  readonly externalMiB: number
  readonly rssMiB: number
  /** GC pause seconds by kind since the previous sample. */
  readonly gcMs: Readonly<Record<string, number>>
}

const MIB = 1024 * 1024

const valueOf = (text: string, series: string) => {
  const at = text.indexOf(`\n${series} `)
  if (at === -1) return 0
  const end = text.indexOf("\n", at + 1)
  return Number(text.slice(at + series.length + 2, end === -1 ? undefined : end))
}

const gcSums = (text: string) => {
  const sums: Record<string, number> = {}
  for (const m of text.matchAll(/^vdb_process_gc_duration_seconds_sum\{[^}]*kind="(\w+)"[^}]*\} ([\d.e+-]+)$/gm)) {
    sums[m[1]!] = Number(m[2])
  }
  return sums
}

const rssOf = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return m === null ? 0 : Number(m[1]) / 1024
}

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
}

const round = (n: number) => Math.round(n * 10) / 10

/** Scrapes `http://127.0.0.1:metricsPort/metrics` every `everyMs` until `stop()`. */
export const sampleServer = (metricsPort: number, pid: number, everyMs = 500) => {
  const started = performance.now()
  const samples: Array<ServerSample> = []
  let previousGc: Record<string, number> | undefined
  let busy = false
  const scrape = async () => {
    if (busy) return
    busy = true
    try {
      const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
      const text = `\n${await response.text()}`
      const gc = gcSums(text)
      const gcMs: Record<string, number> = {}
      for (const [kind, sum] of Object.entries(gc)) gcMs[kind] = round((sum - (previousGc?.[kind] ?? 0)) * 1000)
      const first = previousGc === undefined
      previousGc = gc
      if (first) return
      samples.push({
        t: round((performance.now() - started) / 1000),
        loopMaxMs: round(valueOf(text, "vdb_process_event_loop_delay_max_seconds") * 1000),
        loopP99Ms: round(valueOf(text, "vdb_process_event_loop_delay_p99_seconds") * 1000),
        poolInUse: valueOf(text, "vdb_db_pool_connections{state=\"in_use\"}"),
        poolWaiting: valueOf(text, "vdb_db_pool_waiting"),
        heapUsedMiB: round(valueOf(text, "vdb_process_heap_used_bytes") / MIB),
        externalMiB: round(valueOf(text, "vdb_process_external_memory_bytes") / MIB),
        rssMiB: round(rssOf(pid)),
        gcMs
      })
    } catch {
      // A scrape that fails (the server stopping) is not a sample.
    } finally {
      busy = false
    }
  }
  const timer = setInterval(() => void scrape(), everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      const loop = samples.map((s) => s.loopMaxMs)
      const gcTotal: Record<string, number> = {}
      for (const s of samples) for (const [k, v] of Object.entries(s.gcMs)) gcTotal[k] = round((gcTotal[k] ?? 0) + v)
      const summary = {
        samples: samples.length,
        everyMs,
        /** The longest event-loop stall in each sampling window: its median, 90th percentile and max over windows. */
        loopMaxMs: { p50: percentile(loop, 0.5), p90: percentile(loop, 0.9), max: Math.max(0, ...loop) },
        /** Windows in which the loop stalled 50 ms or more at least once. */
        windowsStalled50Ms: loop.filter((ms) => ms >= 50).length,
        poolWaiting: {
          max: Math.max(0, ...samples.map((s) => s.poolWaiting)),
          windowsWaiting: samples.filter((s) => s.poolWaiting > 0).length
        },
        poolInUseMax: Math.max(0, ...samples.map((s) => s.poolInUse)),
        heapUsedMiBMax: Math.max(0, ...samples.map((s) => s.heapUsedMiB)),
        externalMiBMax: Math.max(0, ...samples.map((s) => s.externalMiB)),
        gcMs: gcTotal
      }
      return { summary, timeline: samples as ReadonlyArray<ServerSample> }
    }
  }
}
