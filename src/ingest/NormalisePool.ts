import { Effect, Exit, Scope } from "effect"
import { availableParallelism } from "node:os"
import { Worker } from "node:worker_threads"
import type { Normalised, UpstreamItem } from "./Upstream.ts"

/** What a worker needs of an item (its parsed form is rebuilt from `raw` there). */
export type WorkerItem = Pick<UpstreamItem, "source" | "identifier" | "raw" | "position">

export type WorkerResult =
  | { readonly outputs: ReadonlyArray<Normalised> }
  | { readonly problem: { readonly position: string; readonly reason: string } }

export interface NormalisePool {
  /** Normalises a batch on the next worker; results in input order. */
  readonly normalise: (items: ReadonlyArray<WorkerItem>) => Effect.Effect<ReadonlyArray<WorkerResult>>
  /** A worker died: the pool fails every batch from then on. */
  readonly broken: () => boolean
}

interface PoolState {
  readonly workers: ReadonlyArray<Worker>
  readonly pending: Map<number, (results: ReadonlyArray<WorkerResult> | Error) => void>
  next: number
  id: number
  broken: Error | undefined
  closing: boolean
}

/**
 * Items per message to a worker: a batch goes as several messages, so each side holds a message's
 * texts and results for milliseconds, not for the whole batch.
 */
const MESSAGE_ITEMS = 250

/** One worker per core beyond the one running the pipeline (and the database's share): at least one. */
export const defaultWorkers = () => Math.max(1, Math.min(4, availableParallelism() - 1))

/** A record's JSON parsed on first access (the SQL store never asks: it stores `body.text`). */
const withLazyRecord = (out: Normalised): Normalised => {
  if (out.kind !== "record" || out.body === undefined) return out
  const text = out.body.text
  let parsed: Record<string, unknown> | undefined
  return Object.defineProperty(out, "record", {
    enumerable: true,
    get: () => (parsed ??= JSON.parse(text) as Record<string, unknown>)
  })
}

/**
 * Worker threads for phase 2. Normalising is pure CPU and most of an
 * ingestion's JavaScript time; on workers it overlaps the database writes
 * and the reading of the next batches on the main thread. Scoped: the
 * workers end with the scope.
 */
export const makeNormalisePool = (size: number) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pending = new Map<number, (results: ReadonlyArray<WorkerResult> | Error) => void>()
      const workers = Array.from({ length: size }, () => {
        const worker = new Worker(new URL("./NormaliseWorker.ts", import.meta.url))
        worker.on("message", (m: { readonly id: number; readonly results: ReadonlyArray<WorkerResult> }) => {
          const resume = pending.get(m.id)
          pending.delete(m.id)
          resume?.(m.results)
        })
        // A worker that dies (out of memory, a bug outside the per-item guard) fails its batches
        // rather than leaving them waiting: the run stops and a re-run converges. The pool is
        // broken from then on: a shared one is not handed to another run.
        const fail = (cause: Error) => {
          state.broken = cause
          for (const [id, resume] of pending) {
            pending.delete(id)
            resume(cause)
          }
        }
        worker.on("error", fail)
        worker.on("exit", () => {
          if (!state.closing) fail(new Error("a normalising worker exited"))
        })
        return worker
      })
      const state: PoolState = { workers, pending, next: 0, id: 0, broken: undefined, closing: false }
      return state
    }),
    (pool) =>
      Effect.promise(() => {
        pool.closing = true
        return Promise.all(pool.workers.map((w) => w.terminate()))
      })
  ).pipe(Effect.map((pool): NormalisePool => {
    const post = (worker: Worker, items: ReadonlyArray<WorkerItem>) =>
      Effect.callback<ReadonlyArray<WorkerResult>>((resume) => {
        if (pool.broken !== undefined) return resume(Effect.die(pool.broken))
        const id = pool.id++
        pool.pending.set(id, (results) =>
          resume(
            results instanceof Error
              ? Effect.die(results)
              : Effect.succeed(results.map((r) => "outputs" in r ? { outputs: r.outputs.map(withLazyRecord) } : r))
          ))
        worker.postMessage({
          id,
          items: items.map(({ identifier, position, raw, source }) => ({ source, identifier, raw, position }))
        })
      })
    return {
      broken: () => pool.broken !== undefined,
      normalise: (items) => {
        const worker = pool.workers[pool.next]!
        pool.next = (pool.next + 1) % pool.workers.length
        const chunks: Array<ReadonlyArray<WorkerItem>> = []
        for (let at = 0; at < items.length; at += MESSAGE_ITEMS) chunks.push(items.slice(at, at + MESSAGE_ITEMS))
        return Effect.map(
          Effect.forEach(chunks, (chunk) => post(worker, chunk), { concurrency: "unbounded" }),
          (parts) => parts.flat()
        )
      }
    }
  }))

/** The process's shared pool: its size, users, and the scope its workers live in. */
let shared: { size: number; users: number; pool: NormalisePool; scope: Scope.Closeable } | undefined

/**
 * The process's one pool of `size` workers, shared by every run that holds it
 * at once (the sources of a sync run at the same time, each an ingestion):
 * one set of threads and their heaps, whatever the number of runs, and no
 * threads started per run. Created by the first run to ask, ended when the
 * last one lets go. A broken pool (a worker died) is not handed out again;
 * a run asking for another size gets a pool of its own.
 */
export const sharedNormalisePool = (size: number) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const current = shared
      if (current !== undefined && current.size === size && !current.pool.broken()) {
        current.users++
        return Effect.succeed(current)
      }
      return Effect.gen(function*() {
        const scope = yield* Scope.make()
        const pool = yield* makeNormalisePool(size).pipe(Scope.provide(scope))
        const made = { size, users: 1, pool, scope }
        // A pool of another size (or a broken one) stays with the runs holding it.
        if (current === undefined || current.pool.broken()) shared = made
        return made
      })
    }),
    (held) =>
      Effect.suspend(() => {
        held.users--
        if (held.users > 0) return Effect.void
        if (shared === held) shared = undefined
        return Scope.close(held.scope, Exit.void)
      })
  ).pipe(Effect.map((held) => held.pool))
