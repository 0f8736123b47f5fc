import { NodeServices } from "@effect/platform-node"
import { Effect, Layer, Stdio, Stream } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"

/**
 * Runs a CLI command in process (`TestConsole` must be in the test's layer) with
 * `stdin` as standard input; returns the lines it printed on stdout and stderr
 * during this run, and the message of the error it failed with, if any.
 */
export const cliRunner = <const Name extends string, I, C, E, R>(command: Command.Command<Name, I, C, E, R>) => {
  const cli = Command.runWith(command, { version: "test" })
  return (args: ReadonlyArray<string>, stdin = "") =>
    Effect.gen(function*() {
      const before = { out: (yield* TestConsole.logLines).length, err: (yield* TestConsole.errorLines).length }
      const exit = yield* Effect.exit(
        cli(args).pipe(
          Effect.provide(Layer.merge(
            NodeServices.layer,
            Stdio.layerTest({ stdin: stdin === "" ? Stream.empty : Stream.make(new TextEncoder().encode(stdin)) })
          ))
        )
      )
      const out = (yield* TestConsole.logLines).slice(before.out).map(String)
      const err = (yield* TestConsole.errorLines).slice(before.err).map(String)
      const error = exit._tag === "Failure"
        ? String((exit.cause.reasons[0] as { error?: { message?: string } })?.error?.message)
        : undefined
      return { out, err, error }
    })
}
