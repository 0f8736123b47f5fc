import { day, type Json, loadOf, machineOf, n, type Row } from "./tableCells.ts"

/** The `query` bench's rows (bench/results/query.json): the batch, then the singles gzip and identity against the floor. */
export const queryRows = (r: Json): Array<Row> => {
  if (r === undefined) return []
  const common = { date: day(r.date), machine: machineOf(r), load: loadOf(r) }
  const q = r.query ?? {}
  const floor = q.bareFloor
  const single = (label: string, run: Json, floorRun: Json, met: unknown): Row => ({
    bench: `\`query\`: \`POST /v1/query\` at ${n(q.clients)} clients, ${label}`,
    figure: `${n(run?.perSecond)} req/s, p50 ${n(run?.p50, 1)} ms, **p99 ${n(run?.p99, 1)} ms** (server ${
      n(run?.cpu?.serverMicros)
    } µs a request)`,
    baseline: floorRun === undefined
      ? "—"
      : `a bare node:http server with the same bytes and nothing else: ${n(floorRun.perSecond)} req/s, p99 ${
        n(floorRun.p99, 1)
      } ms`,
    target: `p99 ≤ ${n(r.target?.queryP99Ms)} ms`,
    met: typeof met === "boolean" ? met : undefined,
    ...common
  })
  return [
    {
      bench: `\`query\`: \`querybatch\` of ${n(r.queries)} queries, ${n(r.records)} records, PostgreSQL`,
      figure: `**${n(r.querybatch?.queriesPerSecond)} queries/s** (p50 ${n(r.querybatch?.p50, 1)} ms a batch)`,
      baseline: `the bare indexed SQL lookup of the same rows: ${n(r.bareLookup?.queriesPerSecond)} queries/s`,
      target: `≥ ${n(r.target?.querybatchPerSecond)} queries/s`,
      met: typeof r.met?.querybatch === "boolean" ? r.met.querybatch : undefined,
      ...common
    },
    single("`Accept-Encoding: gzip` (as osv-scanner's Go client asks)", q.gzip, floor?.gzip, r.met?.queryGzip),
    single(
      `identity bodies (mean ${n((q.bodies?.meanBytes ?? 0) / 1024)} KiB, p99 ${n((q.bodies?.p99 ?? 0) / 1024)} KiB)`,
      q,
      floor?.identity,
      r.met?.queryIdentity
    )
  ]
}
