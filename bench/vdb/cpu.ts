// CPU accounting of `npm run bench -- vdb` from /proc: where the machine's
// cores went while a load ran (this load process, the server under test, the
// PostgreSQL backends of the bench database, everything else on the machine).
import { readdirSync, readFileSync } from "node:fs"

const TICK_MS = 10 // USER_HZ = 100

type Snapshot = Map<number, { readonly title: string; readonly ms: number }>

export const snapshot = (): Snapshot => {
  const out: Snapshot = new Map()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      const close = stat.lastIndexOf(")")
      const fields = stat.slice(close + 2).split(" ")
      const comm = stat.slice(stat.indexOf("(") + 1, close)
      // A backend's title names its database: "postgres: 15/main: postgres <db> 127.0.0.1(port) idle".
      const title = comm === "postgres" ? readFileSync(`/proc/${entry}/cmdline`, "utf8") : comm
      out.set(Number(entry), { title, ms: (Number(fields[11]) + Number(fields[12])) * TICK_MS })
    } catch {
      // the process exited meanwhile
    }
  }
  return out
}

export interface CpuSplit {
  readonly load: number
  readonly server: number
  readonly postgres: number
  readonly other: number
}

/** CPU milliseconds by role between two snapshots. */
export const split = (
  before: Snapshot,
  after: Snapshot,
  roles: { readonly server: number; readonly database: string }
): CpuSplit => {
  const sums = { load: 0, server: 0, postgres: 0, other: 0 }
  for (const [pid, { title, ms }] of after) {
    const delta = ms - (before.get(pid)?.ms ?? 0)
    if (delta <= 0) continue
    if (pid === process.pid) sums.load += delta
    else if (pid === roles.server) sums.server += delta
    else if (title.includes(` ${roles.database} `)) sums.postgres += delta
    else sums.other += delta
  }
  return sums
}
