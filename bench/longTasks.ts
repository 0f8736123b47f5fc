// `node bench/longTasks.ts PROFILE.cpuprofile [--over MS] [--top N]`: the main thread's long tasks in a
// V8 CPU profile (a server's `--cpu-prof`, e.g. `bench/sync.ts --cpu-prof DIR`): stretches of samples
// with no idle sample between them, which a request arriving meanwhile waits out. Prints how many
// stretches passed `--over` (default 20 ms) and their time, then for the time inside them the functions
// by self time and the project's functions (src/, node_modules) by inclusive time: what to slice or move.
import { readFileSync } from "node:fs"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = args.indexOf(name)
  return i === -1 ? fallback : Number(args[i + 1])
}
const OVER_MS = option("--over", 20)
const TOP = option("--top", 25)
const profile = JSON.parse(readFileSync(args[0]!, "utf8")) as Profile

const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const short = (n: ProfileNode) => {
  const url = n.callFrame.url.replace(/^file:\/\/.*?\/(src|bench|node_modules)\//, "$1/")
  return `${n.callFrame.functionName || "(anonymous)"} ${url}:${n.callFrame.lineNumber + 1}`
}
const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id))

// Stretches of non-idle samples (each sample's time is the delta that follows it).
const tasks: Array<{ start: number; end: number; ms: number }> = []
let open: { start: number; ms: number } | undefined
for (let i = 0; i < profile.samples.length; i++) {
  const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000
  if (idle.has(profile.samples[i]!)) {
    if (open !== undefined) tasks.push({ start: open.start, end: i, ms: open.ms })
    open = undefined
    continue
  }
  open ??= { start: i, ms: 0 }
  open.ms += ms
}
if (open !== undefined) tasks.push({ start: open.start, end: profile.samples.length, ms: open.ms })

const long = tasks.filter((t) => t.ms >= OVER_MS).sort((a, b) => b.ms - a.ms)
const totalMs = profile.timeDeltas.reduce((a, b) => a + b, 0) / 1000
const busyMs = tasks.reduce((a, t) => a + t.ms, 0)
const longMs = long.reduce((a, t) => a + t.ms, 0)
console.log(
  `profile ${(totalMs / 1000).toFixed(1)} s, busy ${(busyMs / 1000).toFixed(1)} s in ${tasks.length} tasks; ` +
    `${long.length} tasks >= ${OVER_MS} ms (${(longMs / 1000).toFixed(1)} s), longest ${
      long.slice(0, 10).map((t) => t.ms.toFixed(0)).join(", ")
    } ms`
)

const self = new Map<number, number>()
const inclusive = new Map<string, number>()
for (const task of long) {
  for (let i = task.start; i < task.end; i++) {
    const id = profile.samples[i]!
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000
    self.set(id, (self.get(id) ?? 0) + ms)
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at)!
      if (!/\/(src|node_modules)\//.test(node.callFrame.url)) continue
      const key = short(node)
      if (seen.has(key)) continue
      seen.add(key)
      inclusive.set(key, (inclusive.get(key) ?? 0) + ms)
    }
  }
}
const selfByName = new Map<string, number>()
for (const [id, ms] of self) {
  const key = short(byId.get(id)!)
  selfByName.set(key, (selfByName.get(key) ?? 0) + ms)
}
const table = (title: string, entries: Map<string, number>) => {
  console.log(`\n${title}`)
  for (const [key, ms] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    console.log(`${(ms / 1000).toFixed(2).padStart(8)} s ${((ms / longMs) * 100).toFixed(1).padStart(5)} %  ${key}`)
  }
}
table(`self time inside the long tasks`, selfByName)
table(`inclusive time inside the long tasks (src/, node_modules/)`, inclusive)
