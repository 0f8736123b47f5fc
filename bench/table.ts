// `npm run bench -- table` (or `make bench-table`): renders the README's
// benchmark table from bench/results/*.json and rewrites it between the
// `<!-- bench-table:start -->` and `<!-- bench-table:end -->` markers. The
// table is never typed by hand: a figure that is not in a result file is not
// in the README. Each row says when its result was measured, on which machine
// when the result records it, its target and whether it was met.
import { readFileSync, writeFileSync } from "node:fs"
import { cpus } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { queryRows } from "./queryTable.ts"
import { syncRows } from "./syncTable.ts"
import { all, day, type Json, loadOf, machineOf, ms, n, pct, type Row } from "./tableCells.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const RESULTS = join(ROOT, "bench/results")
const README = join(ROOT, "README.md")
const START = "<!-- bench-table:start -->"
const END = "<!-- bench-table:end -->"

const load = (name: string): Json | undefined => {
  try {
    return JSON.parse(readFileSync(join(RESULTS, `${name}.json`), "utf8"))
  } catch {
    return undefined
  }
}

/**
 * Reads `api`, `bareFetch` (or `bare`), `ratio` (a number or `{ rps }`), `target` and `met`
 * (a boolean, or flags that must all hold), plus one reported row per `configurations` entry
 * (`what`, `rps`, `p50`, `p99`, `ratio`) and `coldCache`, when present.
 */
const vdbRows = (r: Json): Array<Row> => {
  if (r === undefined) return []
  const bare = r.bareFetch ?? r.bare
  const ratio = typeof r.ratio === "number"
    ? r.ratio
    : r.ratio?.rps ?? (r.api?.rps && bare?.rps ? r.api.rps / bare.rps : undefined)
  const target = typeof r.target === "number" ? r.target : r.targets?.ratio ?? 0.5
  return [
    {
      bench: "`vdb`: `/v1/vuln/{id}`, ApiKey, limits 0, usage log",
      figure: `${n(r.api?.rps)} req/s, p50 ${n(r.api?.p50, 1)} ms, p99 ${n(r.api?.p99, 1)} ms: **${
        pct(ratio)
      }** of the bare fetch`,
      baseline: `bare single-row PostgreSQL fetch, ${n(bare?.rps)} req/s`,
      target: `≥ ${pct(target)} of the bare fetch${r.met?.p99 === undefined ? "" : ", p99 ≤ 3× the bare fetch's"}`,
      met: typeof r.met === "boolean"
        ? r.met
        : r.met !== undefined
        ? all(...Object.values(r.met))
        : typeof ratio === "number"
        ? ratio >= target
        : undefined,
      date: day(r.date ?? r.at),
      machine: machineOf(r),
      load: loadOf(r)
    },
    ...Object.values(r.configurations ?? {}).map((c: Json): Row => ({
      bench: `\`vdb\`: ${c.what}`,
      figure: `${n(c.rps)} req/s, p50 ${n(c.p50, 1)} ms, p99 ${n(c.p99, 1)} ms: **${pct(c.ratio)}** of the bare fetch`,
      baseline: "bare fetch, same run",
      target: "reported",
      met: undefined,
      date: day(r.date ?? r.at),
      machine: machineOf(r),
      load: loadOf(r)
    })),
    ...(r.coldCache?.cold === undefined ? [] : [{
      bench: `\`vdb\`: cold cache, ${n(r.coldCache.identifiers)} identifiers once each after an ingest`,
      figure: `${n(r.coldCache.cold.rps)} req/s, p50 ${n(r.coldCache.cold.p50, 1)} ms, p99 ${
        n(r.coldCache.cold.p99, 1)
      } ms`,
      baseline: `the same list warm, ${n(r.coldCache.warm?.rps)} req/s`,
      target: "reported",
      met: undefined,
      date: day(r.date ?? r.at),
      machine: machineOf(r),
      load: loadOf(r)
    }])
  ]
}

const gatewayRows = (r: Json): Array<Row> => {
  if (r === undefined) return []
  const log = r.accessLog?.on === false ? "access log off" : "production access log on"
  const rows: Array<Row> = [
    {
      bench: `\`gateway\`: added latency, concurrency 1 (${log})`,
      figure: `p50 ${ms(r.addedLatencyMs?.p50)}, p99 ${ms(r.addedLatencyMs?.p99)}${
        r.addedLatencyMs?.bareRelayP99 === undefined
          ? ""
          : `; a bare Node relay adds p50 ${ms(r.addedLatencyMs.bareRelayP50)}, p99 ${
            ms(r.addedLatencyMs.bareRelayP99)
          } (the floor)`
      }`,
      baseline: "direct calls to the same local upstream",
      target: `p50 ≤ ${r.targets?.addedP50Ms} ms, p99 ≤ ${r.targets?.addedP99Ms} ms`,
      met: all(r.met?.addedP50, r.met?.addedP99),
      date: day(r.date),
      machine: machineOf(r),
      load: loadOf(r)
    },
    {
      bench: `\`gateway\`: throughput, concurrency 64 (${log})`,
      figure: `${n(r.throughputRps?.gateway)} req/s: **${pct(r.throughputRatio)}** of the bare relay (CPU per request ${
        n(r.cpuMicrosPerRequest?.gateway)
      } µs vs ${n(r.cpuMicrosPerRequest?.bareRelay)} µs)${
        r.relayWithAccessLog === undefined
          ? ""
          : r.accessLog?.on === false
          ? `; the bare relay with the server's Node settings (no log, as the gateway here) reaches ${
            pct(r.relayWithAccessLog.ratioToBareRelay)
          } (${n(r.relayWithAccessLog.cpuMicrosPerRequest)} µs), and the gateway is ${
            pct(r.relayWithAccessLog.gatewayRatioToIt)
          } of it`
          : `; the bare relay writing the same access log reaches ${pct(r.relayWithAccessLog.ratioToBareRelay)} (${
            n(r.relayWithAccessLog.cpuMicrosPerRequest)
          } µs, the floor with the log on), and the gateway is ${pct(r.relayWithAccessLog.gatewayRatioToIt)} of it`
      }`,
      baseline: `bare Node relay (undici), ${n(r.throughputRps?.bareRelay)} req/s`,
      target: `≥ ${pct(r.targets?.throughputRatio)}`,
      met: r.met?.throughput,
      date: day(r.date),
      machine: machineOf(r),
      load: loadOf(r)
    },
    ...(r.frameworkFloor === undefined ? [] : [{
      bench: `\`gateway\`: framework floor, concurrency 64 (${log})`,
      figure: `the same relay as one route on Effect's HTTP server: ${n(r.frameworkFloor.rps)} req/s, **${
        pct(r.frameworkFloor.ratioToBareRelay)
      }** of the bare relay; the gateway is ${pct(r.frameworkFloor.gatewayRatioToFloor)} of it`,
      baseline: "bare Node relay, same run",
      target: "reported: the ceiling while the routes are served by `HttpRouter`",
      met: undefined,
      date: day(r.date),
      machine: machineOf(r),
      load: loadOf(r)
    }]),
    {
      bench: "`gateway`: streaming, added time to first byte",
      figure: ms(r.firstByteMs?.addedP50),
      baseline: "direct streamed call",
      target: `≤ ${r.targets?.firstByteAddedMs} ms`,
      met: r.met?.firstByte,
      date: day(r.date),
      machine: machineOf(r),
      load: loadOf(r)
    }
  ]
  if (r.memory !== undefined) {
    rows.push({
      bench: `\`gateway\`: RSS over ${r.memory.seconds} s at concurrency 64`,
      figure: `${n(r.memory.earlyRssMiB)} → ${n(r.memory.lateRssMiB)} MiB (${r.memory.growth >= 0 ? "+" : ""}${
        n(r.memory.growth * 100, 1)
      } %), ${n(r.memory.requests)} requests`,
      baseline: "its own RSS after warm-up",
      target: `flat within ${pct(r.targets?.rssGrowth)}`,
      met: r.met?.rssFlat,
      date: day(r.date),
      machine: machineOf(r),
      load: loadOf(r)
    })
  }
  return rows
}

const firewallRows = (r: Json): Array<Row> =>
  r === undefined ? [] : [{
    bench: `\`firewall\`: ${r.case ?? "chat request with guardrail rules"}`,
    figure: `added p50 **${ms(r.addedP50Ms?.firewallOverBareRelay)}** (firewall step alone ${
      ms(r.addedP50Ms?.firewallOverAllowAll)
    })`,
    baseline: "bare relay, same run",
    target: `≤ ${r.targets?.addedP50Ms} ms`,
    met: r.met?.addedP50,
    date: day(r.date),
    machine: machineOf(r),
    load: loadOf(r)
  }]

const guardrailRows = (r: Json): Array<Row> =>
  r === undefined ? [] : [{
    bench: `\`guardrails\`: ${r.patterns} RE2 patterns over ${n(r.bodyBytes / 1048576, 1)} MiB, no match`,
    figure: `**${n(r.scan?.mbPerSecond)} MB/s** on one core (${
      n(r.ratioToBaseline?.scanVsOneRe2Test, 2)
    }× one single-pattern RE2 pass)`,
    baseline: `one RE2 test of one pattern, ${n(r.baseline?.oneRe2Test?.mbPerSecond)} MB/s`,
    target: `≥ ${r.scan?.target} MB/s`,
    met: r.scan?.met,
    date: day(r.date),
    machine: machineOf(r),
    load: loadOf(r)
  }]

/** `; WHO use N µs of CPU a record of the B two cores give at the target rate` (bench/cpuShare.ts), or nothing. */
const cpuOf = (cpu: Json, who: string): string =>
  cpu === undefined
    ? ""
    : `; ${who} used ${
      n(who === "the writes" ? cpu.processMicros + cpu.postgresMicros : cpu.machineBusyMicros)
    } µs of CPU a record (PostgreSQL ${n(cpu.postgresMicros)}) of the ${
      n(cpu.budgetMicros)
    } the cores give at the target`

const ingestRows = (r: Json): Array<Row> => {
  if (r === undefined) return []
  const readers = r.readers === undefined
    ? ""
    : `; ${r.readers.concurrency ?? ""} readers on \`/vuln\`${
      r.readers.targetRate ? ` at ${r.readers.targetRate} req/s` : ""
    }${r.throughServer === undefined ? " meanwhile" : " during both sets"}: p99 ${n(r.readers.p99, 1)} ms, max ${
      n(r.readers.max, 0)
    } ms, ${n(r.readers.errors)} errors`
  const throughServer = r.throughServer === undefined
    ? ""
    : `; a second set through \`bin/vdb ingest\` and the server's admin socket, ${
      n(r.throughServer.perSecond)
    } records/s${
      r.throughServer.cpu === undefined
        ? ""
        : ` (µs of CPU a record: server ${n(r.throughServer.cpu.serverMicros)}, CLI ${
          n(r.throughServer.cpu.cliMicros)
        }, PostgreSQL ${n(r.throughServer.cpu.postgresMicros)}; the machine ${
          n(r.throughServer.cpu.machineBusyMicros)
        })`
    }`
  return [{
    bench: `\`ingest\`: ${n(r.generated?.items)} generated records on PostgreSQL`,
    figure: `**${n(r.generated?.perSecond)} records/s** (pipeline in process${
      cpuOf(r.generated?.cpu, "the machine")
    })${readers}${throughServer}; re-ingest unchanged ${n(r.reingest?.perSecond)}/s`,
    baseline: `bare multi-row INSERT of the same rows, ${n(r.baseline?.perSecond)}/s${
      r.storeFloor === undefined
        ? ""
        : `; the store floor (the pipeline's own writes alone, for ${
          n(r.storeFloor.items)
        } items read and normalised beforehand), **${n(r.storeFloor.perSecond)}/s**${
          cpuOf(r.storeFloor.cpu, "the writes")
        }`
    }`,
    target: `≥ ${n(r.target)}/s`,
    met: typeof r.met === "boolean" ? r.met : undefined,
    date: day(r.date),
    machine: machineOf(r),
    load: loadOf(r)
  }]
}

const memoryRows = (r: Json): Array<Row> =>
  r === undefined ? [] : (r.results ?? []).flatMap((m: Json): Array<Row> => [
    {
      bench: `\`memory\`: \`bin/vdb serve\` (four services) idle, ${
        m.db === "embedded" ? "embedded database" : "PostgreSQL"
      }`,
      figure: `**${n(m.idleMiB)} MiB** RSS`,
      baseline: "—",
      target: `≤ ${m.target?.idleMiB} MiB`,
      met: m.met?.idle,
      date: day(r.date),
      machine: machineOf(r),
      load: loadOf(r)
    },
    {
      bench: `\`memory\`: after ingesting \`${m.ingest?.corpus}\`, ${m.db === "embedded" ? "embedded" : "PostgreSQL"}`,
      figure: `peak ${n(m.peakDuringIngestMiB)} MiB; ${n(m.target?.settleSeconds)} s later ${n(m.finalMiB)} MiB (${
        m.finalOverIdle >= 0 ? "+" : ""
      }${n(m.finalOverIdle * 100)} % of idle)`,
      baseline: `idle, ${n(m.idleMiB)} MiB`,
      target: `back within ${pct(m.target?.settleWithin)} of idle in ${n(m.target?.settleSeconds)} s`,
      met: m.met?.returnsToIdle,
      date: day(r.date),
      machine: machineOf(r),
      load: loadOf(r)
    }
  ])

const rows: Array<Row> = [
  ...vdbRows(load("vdb")),
  ...gatewayRows(load("gateway")),
  ...firewallRows(load("firewall")),
  ...guardrailRows(load("guardrails")),
  ...ingestRows(load("ingest")),
  ...syncRows(load("sync")),
  ...queryRows(load("query")),
  ...memoryRows(load("memory"))
]

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ")
// The header names the machine most rows were measured on (not the one generating the table), and a row
// measured elsewhere, or on a machine it did not record, says so.
const counts = new Map<string, number>()
for (const row of rows) if (row.machine !== undefined) counts.set(row.machine, (counts.get(row.machine) ?? 0) + 1)
const here = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ??
  `${cpus().length} × ${(cpus()[0]?.model ?? "unknown CPU").replace(/\s+/g, " ").trim()}`
const machineNote = (machine: string | undefined) =>
  machine === undefined ? " (machine not recorded)" : machine === here ? "" : ` (${cell(machine)})`
const table = [
  START,
  `<!-- generated by \`make bench-table\` from bench/results/*.json; edits here are overwritten -->`,
  `Generated ${
    new Date().toISOString().slice(0, 10)
  } from \`bench/results/*.json\`. Machine: ${here} unless a row names another. Each figure is one run; "measured" is that run's UTC time and, where recorded, the machine's 1-minute load average then (2 cores: above 2, other work was competing).`,
  "",
  "| bench | figure | baseline (same run) | target | met | measured |",
  "|---|---|---|---|---|---|",
  ...rows.map((row) =>
    `| ${cell(row.bench)} | ${cell(row.figure)} | ${cell(row.baseline)} | ${cell(row.target)} | ${
      row.met === undefined ? "—" : row.met ? "met" : "**not met**"
    } | ${row.date ?? "—"}${row.load !== undefined ? `, load ${row.load}` : ""}${machineNote(row.machine)} |`
  ),
  END
].join("\n")

const readme = readFileSync(README, "utf8")
const from = readme.indexOf(START)
const to = readme.indexOf(END)
if (from === -1 || to === -1 || to < from) {
  console.error(`README.md has no ${START} … ${END} pair; the table is:\n`)
  console.log(table)
  process.exit(1)
}
writeFileSync(README, readme.slice(0, from) + table + readme.slice(to + END.length))
console.log(table)
