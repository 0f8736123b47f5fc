import type { ChildProcess } from "node:child_process"

/**
 * Asks a child of `bench/gateway.ts` (its `reportCpu` listener) for one figure over IPC:
 * `cpu` (µs of user + system time), `rss` (bytes) or `heap` (V8's spaces, MiB).
 */
export const askChild = <A = number>(child: ChildProcess, question: "cpu" | "rss" | "heap") =>
  new Promise<A>((done) => {
    const onMessage = (reply: any) => {
      if (reply?.[question] !== undefined) {
        child.off("message", onMessage)
        done(reply[question])
      }
    }
    child.on("message", onMessage)
    child.send(question)
  })

/** The median; of an even count, the mean of the two middle values. */
export const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

export const round3 = (n: number) => Math.round(n * 1000) / 1000
