import { Effect } from "effect"
import { existsSync, unlinkSync } from "node:fs"
import { connect } from "node:net"
import { resolve } from "node:path"

export const adminSocketPath = (dataDir: string) => resolve(dataDir, "admin.sock")

/** Whether a server answers on the socket (a file left by a crashed process does not). */
export const isServing = (path: string): Effect.Effect<boolean> =>
  existsSync(path)
    ? Effect.callback<boolean>((resume) => {
      const socket = connect({ path })
      const done = (answer: boolean) => {
        socket.destroy()
        resume(Effect.succeed(answer))
      }
      socket.setTimeout(1000, () => done(false))
      socket.once("connect", () => done(true))
      socket.once("error", () => done(false))
    })
    : Effect.succeed(false)

/** Removes a socket file nobody answers on, so a new server can listen there. */
export const removeStaleSocket = (path: string) =>
  Effect.flatMap(isServing(path), (serving) =>
    serving
      ? Effect.succeed(false)
      : Effect.sync(() => {
        if (existsSync(path)) unlinkSync(path)
        return true
      }))
