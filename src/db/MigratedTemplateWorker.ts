/**
 * Worker thread of `MigratedTemplate`: copies the empty cluster into
 * `workerData.dir`, applies every migration there as a server's start-up does,
 * and closes the cluster cleanly. On a thread of its own for the reason
 * `PgliteTemplateWorker` is.
 */
import { Effect, Layer } from "effect"
import { workerData } from "node:worker_threads"
import { layerPglite } from "./Database.ts"
import { MigrationsLayer } from "./Migrations.ts"

const { dir, template } = workerData as { readonly dir: string; readonly template: string }
await Effect.runPromise(Effect.scoped(Layer.build(Layer.provideMerge(MigrationsLayer, layerPglite(dir, template)))))
