/**
 * Worker thread of `PgliteTemplate`: runs initdb into `workerData.dir` and shuts the cluster down
 * cleanly. In a thread of its own so that PGlite's WebAssembly memory, which only grows, goes away
 * with the thread instead of staying in the process that asked.
 */
import { PGlite } from "@electric-sql/pglite"
import { workerData } from "node:worker_threads"

const db = await PGlite.create((workerData as { readonly dir: string }).dir)
await db.close()
