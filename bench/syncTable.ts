import { day, type Json, loadOf, machineOf, n, type Row } from "./tableCells.ts"

/** The `sync` bench's rows (bench/results/sync.json): the first sync, then the incremental and unchanged runs. */
export const syncRows = (r: Json): Array<Row> => {
  if (r === undefined) return []
  const common = { date: day(r.date), machine: machineOf(r), load: loadOf(r) }
  const bySource = (r.first?.sources ?? []).map((s: Json) => `${s.source} ${n(s.perSecond)}/s`).join(", ")
  const unchanged = Object.entries(r.unchanged?.requests ?? {}).map(([source, q]: [string, Json]) =>
    `${source} ${q.conditional}/${q.requests}`
  ).join(", ")
  return [
    {
      bench: `\`sync\`: first sync of ${n(r.records)} records from a loopback feed mirror, PostgreSQL`,
      figure: `**${n(r.first?.perSecond)} records/s** (${bySource}); server RSS ${
        n(r.rss?.aboveIdleMiB)
      } MiB above idle${
        r.readers === undefined
          ? ""
          : `; ${r.readers.concurrency} readers on \`/v1/vuln\` at ${r.readers.targetRate} req/s: p99 ${
            n(r.readers.p99, 1)
          } ms, ${n(r.readers.errors)} errors`
      }`,
      baseline: "—",
      target: `≥ ${n(r.target?.perSecond)}/s, RSS ≤ ${n(r.target?.rssAboveIdleMiB)} MB above idle, p99 ≤ ${
        n(r.target?.p99Ms)
      } ms`,
      met: r.met === undefined ? undefined : r.met.firstPerSecond && r.met.rssAboveIdle && r.met.p99 !== false,
      ...common
    },
    {
      bench: `\`sync\`: a one-hour delta (${n(r.incremental?.records)} records), then nothing changed`,
      figure: `**${n(r.incremental?.seconds, 1)} s**, then **${
        n(r.unchanged?.seconds, 1)
      } s** (conditional requests of all: ${unchanged})`,
      baseline: r.unchanged?.cliSeconds === undefined
        ? "—"
        : `\`bin/vdb sync status\` (the CLI alone) ${n(r.unchanged.cliSeconds, 1)} s`,
      target: `≤ ${n(r.target?.incrementalSeconds)} s; ≤ ${n(r.target?.unchangedSeconds)} s, conditional requests only`,
      met: r.met === undefined ? undefined : r.met.incremental && r.met.unchanged,
      ...common
    }
  ]
}
