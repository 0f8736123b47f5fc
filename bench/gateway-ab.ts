/**
 * A/B of two relays (`make bench BENCH=gateway-ab`): what costs a few percent, which whole
 * `gateway` runs (±0.05 in their ratios on a 2-core VM) cannot show. An upstream and two children
 * of `bench/gateway.ts` (roles `gateway`, `relay` or `relay-log`), A and B, take the load at
 * concurrency 64 alternately, in rounds of 1 s. Each round reads both children's CPU per request
 * (`process.cpuUsage`, steadier than throughput on a busy machine); the figures are medians over
 * the rounds. The child started first measured up to 20 µs a request slower than an identical one
 * started second, so the whole comparison runs twice, A started first and then B started first,
 * and the result is the mean of the two passes.
 *
 * Each side is set from the environment: `AB_A_ROLE` (`relay-log` by default; B's is `gateway`),
 * `AB_A_FLAGS` (Node flags, default the server's, `bench/serverFlags.ts`), `AB_A_ENV` (`K=V ...`,
 * default `bin/vdb`'s glibc settings), and the same for B. So by default it compares the gateway
 * with the floor of its throughput target with the log on, the relay that writes the access log
 * and does nothing else, both as deployed: what is left is the gateway's own work. `AB_A_ROOT`
 * and `AB_B_ROOT` run a side from another checkout of this repository (its `bench/gateway.ts`, so
 * its code; `git worktree add` one at the commit to compare, with `node_modules` linked), which is
 * how a change to the gateway is weighed against its parent.
 * `AB_A_TRACING=RATIO` (and `AB_B_TRACING`) runs that side with tracing on, sampling RATIO of the
 * requests, exporting to a loopback OTLP receiver (`bench/otlpReceiver.ts`, one for the whole run),
 * as `BENCH_TRACING` does in `bench/gateway.ts`: tracing on weighed against tracing off in one run.
 * `AB_ROUNDS` (default 20) sets the rounds of each pass.
 * Writes bench/results/gateway-ab.json.
 */
import { Pool } from "@effect/platform-node/Undici"
import { type ChildProcess, fork } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { askChild, median, round3 } from "./childQuery.ts"
import { ORG, requestBody, SERVICE_KEY } from "./gatewayRequests.ts"
import { benchTracing } from "./otlpReceiver.ts"
import { SERVER_ENV, SERVER_NODE_FLAGS } from "./serverFlags.ts"

const here = dirname(fileURLToPath(import.meta.url))
const ROLES = ["gateway", "relay", "relay-log"] as const
type Role = typeof ROLES[number]

interface Side {
  readonly role: Role
  /** The checkout whose `bench/gateway.ts` runs this side. */
  readonly root: string
  readonly flags: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** The sampling ratio when this side traces (`AB_A_TRACING`), else undefined. */
  readonly tracing: string | undefined
}

const words = (text: string | undefined) => (text ?? "").split(" ").filter((word) => word !== "")
const sideOf = (name: "A" | "B", defaultRole: Role): Side => {
  const role = process.env[`AB_${name}_ROLE`] ?? defaultRole
  if (!(ROLES as ReadonlyArray<string>).includes(role)) {
    throw new Error(`AB_${name}_ROLE must be one of ${ROLES.join(", ")}`)
  }
  const flags = process.env[`AB_${name}_FLAGS`]
  const env = process.env[`AB_${name}_ENV`]
  return {
    role: role as Role,
    root: process.env[`AB_${name}_ROOT`] ?? join(here, ".."),
    flags: flags === undefined ? SERVER_NODE_FLAGS : words(flags),
    env: env === undefined
      ? SERVER_ENV
      : Object.fromEntries(
        words(env).map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)])
      ),
    tracing: process.env[`AB_${name}_TRACING`] || undefined
  }
}

const A = sideOf("A", "relay-log")
const B = sideOf("B", "gateway")
const ROUNDS = Number(process.env.AB_ROUNDS ?? 20)
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error("AB_ROUNDS must be a positive integer")
// One receiver for both sides; each traced side gets its ratio in the sampler's setting.
const receiver = A.tracing !== undefined || B.tracing !== undefined
  ? await benchTracing(A.tracing ?? B.tracing)
  : undefined
const tracingEnv = (side: Side): Record<string, string> =>
  side.tracing === undefined || receiver === undefined
    ? {}
    : { ...receiver.env, OTEL_TRACES_SAMPLER_ARG: String(Number(side.tracing)) }

interface Child {
  readonly port: number
  readonly process: ChildProcess
  readonly cpu: () => Promise<number>
}

const start = (
  root: string,
  role: string,
  arg: string,
  env: Readonly<Record<string, string>>,
  flags: ReadonlyArray<string>
) =>
  new Promise<Child>((resolve, reject) => {
    const child = fork(join(root, "bench", "gateway.ts"), [role, arg], {
      // The log (a relay-log's or the gateway's) goes nowhere: the write is not what is compared here.
      stdio: ["ignore", "inherit", "ignore", "ipc"],
      env: { ...process.env, ...env },
      execArgv: [...flags]
    })
    child.once("error", reject)
    child.once("message", (message: any) =>
      resolve({
        port: message.port,
        process: child,
        cpu: () => askChild(child, "cpu")
      }))
  })

const stop = (child: Child) =>
  new Promise<void>((done) => (child.process.once("exit", () => done()), child.process.kill("SIGINT")))

const body = requestBody(false)

/** One pass: `first` is started first. Returns medians of CPU per request (µs) and of B's throughput over A's. */
const pass = async (upstreamPort: number, first: "A" | "B") => {
  const sides = { A, B }
  const order = first === "A" ? (["A", "B"] as const) : (["B", "A"] as const)
  const children: Partial<Record<"A" | "B", Child>> = {}
  for (const name of order) {
    children[name] = await start(
      sides[name].root,
      sides[name].role,
      String(upstreamPort),
      { ...sides[name].env, ...tracingEnv(sides[name]) },
      sides[name].flags
    )
  }
  const pools = {
    A: new Pool(`http://127.0.0.1:${children.A!.port}`, { connections: 64, pipelining: 1 }),
    B: new Pool(`http://127.0.0.1:${children.B!.port}`, { connections: 64, pipelining: 1 })
  }
  const load = async (name: "A" | "B", seconds: number) => {
    const gateway = sides[name].role === "gateway"
    const path = gateway ? `/openai/${ORG}/v1/chat/completions` : "/v1/chat/completions"
    const headers = { authorization: `Bearer ${gateway ? SERVICE_KEY : "service"}`, "content-type": "application/json" }
    const before = await children[name]!.cpu()
    let done = 0
    const until = performance.now() + seconds * 1000
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (performance.now() < until) {
        const response = await pools[name].request({ path, method: "POST", headers, body })
        if (response.statusCode !== 200) throw new Error(`${name} (${sides[name].role}): status ${response.statusCode}`)
        await response.body.arrayBuffer()
        done++
      }
    }))
    return { rps: done / seconds, cpu: (await children[name]!.cpu() - before) / done, done }
  }
  // Warm-up: JIT and keep-alive connections on both.
  const requests = { A: (await load("A", 1)).done, B: (await load("B", 1)).done }
  const ratios: Array<number> = []
  const cpu = { A: [] as Array<number>, B: [] as Array<number> }
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which side goes first within a round too.
    const [x, y] = round % 2 === 0 ? (["A", "B"] as const) : (["B", "A"] as const)
    const measured = { [x]: await load(x, 1), [y]: await load(y, 1) } as Record<
      "A" | "B",
      { rps: number; cpu: number; done: number }
    >
    ratios.push(measured.B.rps / measured.A.rps)
    requests.A += measured.A.done
    requests.B += measured.B.done
    cpu.A.push(measured.A.cpu)
    cpu.B.push(measured.B.cpu)
  }
  await pools.A.close()
  await pools.B.close()
  await Promise.all([stop(children.A!), stop(children.B!)])
  return {
    startedFirst: first,
    // Every request each side served, warm-up included: what a `--cpu-prof` profile of it covers.
    requests,
    cpuMicrosPerRequest: { A: Math.round(median(cpu.A)), B: Math.round(median(cpu.B)) },
    throughputBtoA: round3(median(ratios))
  }
}

const loadStart = loadavg().map((n) => Math.round(n * 100) / 100)
const upstream = await start(join(here, ".."), "upstream", "", {}, [])
const passes = [await pass(upstream.port, "A"), await pass(upstream.port, "B")]
await stop(upstream)
const exported = receiver?.stats()
await receiver?.close()
const mean = (f: (p: typeof passes[number]) => number) => (f(passes[0]!) + f(passes[1]!)) / 2
const result = {
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
  loadAverage: { start: loadStart, end: loadavg().map(round3) },
  roundsPerPass: ROUNDS,
  // The checkout each side ran from, relative to this one ("." when it is this one).
  A: { ...A, root: relative(join(here, ".."), A.root) || "." },
  B: { ...B, root: relative(join(here, ".."), B.root) || "." },
  passes,
  // Each pass's launch-order bias falls on the other side in the other pass; the mean cancels it.
  cpuMicrosPerRequest: {
    A: Math.round(mean((p) => p.cpuMicrosPerRequest.A)),
    B: Math.round(mean((p) => p.cpuMicrosPerRequest.B))
  },
  cpuBMinusA: Math.round(mean((p) => p.cpuMicrosPerRequest.B - p.cpuMicrosPerRequest.A)),
  throughputBtoA: round3(mean((p) => p.throughputBtoA)),
  ...(exported === undefined ? {} : { otlp: exported })
}
mkdirSync(join(here, "results"), { recursive: true })
writeFileSync(join(here, "results", "gateway-ab.json"), JSON.stringify(result, null, 2) + "\n")
console.log(JSON.stringify(result, null, 2))
