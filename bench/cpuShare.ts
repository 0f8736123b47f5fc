/**
 * Where a stretch of a bench's CPU went, read from Linux's `/proc`: this process (every thread:
 * the pipeline's main thread, its workers, V8's garbage-collection helpers), PostgreSQL's
 * processes, and the whole machine. Per record, so a rate can be read against what the cores
 * give: at 10,000 records/s, two cores give 200 µs of CPU a record, whoever spends it.
 *
 * PostgreSQL's share counts the server's processes alive at the end of the stretch (the backends
 * of open pool connections, the WAL writer, the checkpointer), each from where it stood at the
 * start or from its own start; a backend that exits in between is missed. Off Linux the sample is
 * undefined and the bench reports nothing.
 */
import { readdirSync, readFileSync } from "node:fs"
import { cpus } from "node:os"

/** Clock ticks in `/proc` (`USER_HZ`, 100 on every Linux architecture Node runs on), in µs. */
const TICK_MICROS = 10_000

export interface CpuSample {
  /** This process, µs (user + system). */
  readonly process: number
  /** PostgreSQL's processes by pid, µs each. */
  readonly postgres: ReadonlyMap<string, number>
  /** The machine's busy time over all cores (user, nice, system, irq, softirq), µs. */
  readonly machineBusy: number
  /** Time the hypervisor gave other guests while this one wanted a core, µs. */
  readonly machineSteal: number
}

/**
 * PostgreSQL's processes by pid, µs each; with `database`, only the backends connected to it (their
 * title names it: `postgres: 15/main: USER DATABASE HOST(PORT) STATE`), so other benches' sessions
 * on the same server are not counted.
 */
export const postgresMicros = (database?: string): ReadonlyMap<string, number> => {
  const micros = new Map<string, number>()
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const close = stat.lastIndexOf(")")
      if (stat.slice(stat.indexOf("(") + 1, close) !== "postgres") continue
      if (database !== undefined && !readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(` ${database} `)) continue
      // Fields after the command: state is the 3rd field of the line, utime the 14th and stime the 15th.
      const fields = stat.slice(close + 2).split(" ")
      micros.set(pid, (Number(fields[11]) + Number(fields[12])) * TICK_MICROS)
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return micros
}

/** What PostgreSQL's processes spent between two samples: those alive at the end, from where each stood at the start. */
export const postgresDelta = (before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>) => {
  let micros = 0
  for (const [pid, spent] of after) micros += spent - (before.get(pid) ?? 0)
  return micros
}

const machineMicros = () => {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!
    .trim().split(/\s+/).slice(1).map(Number)
  return { busy: (user! + nice! + system! + irq! + softirq!) * TICK_MICROS, steal: (steal ?? 0) * TICK_MICROS }
}

/** Fields of `/proc/PID/stat` after the command's closing parenthesis (the state is field 0 there). */
const statFields = (pid: number | "self"): ReadonlyArray<string> | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** CPU another process has used so far (every thread, user + system), µs; undefined off Linux or once it has ended. */
export const pidMicros = (pid: number | undefined): number | undefined => {
  const fields = pid === undefined ? undefined : statFields(pid)
  return fields === undefined ? undefined : (Number(fields[11]) + Number(fields[12])) * TICK_MICROS
}

/**
 * CPU this process's children used, counted once each has ended and been waited for (`cutime` and
 * `cstime`), µs. A child process's `exit` event comes after Node has waited for it, so the
 * difference across one child's life is that child's whole CPU, even though it is gone by then.
 */
export const endedChildrenMicros = (): number | undefined => {
  const fields = statFields("self")
  return fields === undefined ? undefined : (Number(fields[13]) + Number(fields[14])) * TICK_MICROS
}

export const cpuSample = (): CpuSample | undefined => {
  if (process.platform !== "linux") return undefined
  try {
    const own = process.cpuUsage()
    const machine = machineMicros()
    return {
      process: own.user + own.system,
      postgres: postgresMicros(),
      machineBusy: machine.busy,
      machineSteal: machine.steal
    }
  } catch {
    return undefined
  }
}

/** CPU spent between two samples, µs: this process, PostgreSQL, the machine busy, stolen by the hypervisor. */
export interface CpuSpent {
  readonly process: number
  readonly postgres: number
  readonly machineBusy: number
  readonly machineSteal: number
}

export const cpuSpent = (before: CpuSample | undefined, after: CpuSample | undefined): CpuSpent | undefined =>
  before === undefined || after === undefined ? undefined : {
    process: after.process - before.process,
    postgres: postgresDelta(before.postgres, after.postgres),
    machineBusy: after.machineBusy - before.machineBusy,
    machineSteal: after.machineSteal - before.machineSteal
  }

/** Two stretches' CPU together (a bench timing several windows). */
export const addSpent = (a: CpuSpent | undefined, b: CpuSpent | undefined): CpuSpent | undefined =>
  a === undefined ? b : b === undefined ? a : {
    process: a.process + b.process,
    postgres: a.postgres + b.postgres,
    machineBusy: a.machineBusy + b.machineBusy,
    machineSteal: a.machineSteal + b.machineSteal
  }

/** µs of CPU a record, and the CPU the machine's cores give a record at `targetPerSecond`. */
export const cpuPerRecord = (spent: CpuSpent | undefined, records: number, targetPerSecond: number) => {
  if (spent === undefined || records === 0) return undefined
  const per = (micros: number) => Math.round(micros / records)
  return {
    processMicros: per(spent.process),
    postgresMicros: per(spent.postgres),
    machineBusyMicros: per(spent.machineBusy),
    machineStealMicros: per(spent.machineSteal),
    /** What the machine's cores give a record at the target rate. */
    budgetMicros: Math.round((cpus().length * 1_000_000) / targetPerSecond)
  }
}
