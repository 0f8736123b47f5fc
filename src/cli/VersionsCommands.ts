import { Console, Effect, Result, Schema, Stdio, Stream } from "effect"
import { Argument, Command } from "effect/cli"
import { checkLine } from "../versions/ComparisonLines.ts"
import { versionOrder } from "../versions/VersionOrder.ts"
import { oneLine } from "./FailureMessage.ts"

/** A check that found disagreements; `message` is the one line the CLI root prints. */
export class VersionsCommandError extends Schema.TaggedError<VersionsCommandError>()("VersionsCommandError", {
  message: Schema.String
}) {}

const ecosystem = Argument.String("ecosystem").pipe(
  Argument.withDescription("An OSV ecosystem: npm, PyPI, Maven, Debian, Debian:12, Alpine:v3.19, Red Hat, ...")
)

/**
 * `vdb versions compare ECOSYSTEM < vectors.txt`: every `A < B`, `A = B`, `A > B` line of
 * stdin checked against vdb's order for the ecosystem. Lines are read as they arrive, so a
 * generated file of any size streams through. Needs no server and opens no data directory.
 */
const compare = Command.make("compare", { ecosystem }, (input) =>
  Effect.gen(function*() {
    const order = versionOrder(input.ecosystem)
    if (Result.isFailure(order)) return yield* order.failure
    const counts = { passed: 0, failed: 0, line: 0 }
    const stdio = yield* Stdio.Stdio
    yield* stdio.stdin.pipe(
      Stream.decodeText,
      Stream.splitLines,
      Stream.runForEach((raw) => {
        counts.line++
        const verdict = checkLine(order.success, raw)
        if (verdict === undefined) return Effect.void
        if (verdict.passed) {
          counts.passed++
          return Effect.void
        }
        counts.failed++
        return Console.log(oneLine(`line ${counts.line}: ${raw.trim()}: ${verdict.why}`))
      }),
      Effect.mapError(() => new VersionsCommandError({ message: "could not read the comparisons from stdin" }))
    )
    yield* Console.log(`${counts.passed} passed, ${counts.failed} failed`)
    if (counts.failed > 0) {
      return yield* new VersionsCommandError({
        message: `${counts.failed} of ${
          counts.passed + counts.failed
        } comparisons disagree with vdb's ${order.success.ecosystem} order`
      })
    }
  })).pipe(
    Command.withDescription(
      "Check version comparisons read from stdin (lines `A < B`, `A = B`, `A > B`; `//` and `#` comments) against vdb's order"
    )
  )

export const versionsCommand = Command.make("versions").pipe(
  Command.withDescription("Version order per ecosystem (docs/versions.md)"),
  Command.withSubcommands([compare])
)
