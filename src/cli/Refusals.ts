import { Effect } from "effect"

/**
 * A command's server refusals (an admin RPC's typed error: unknown
 * organization, bad pattern, taken email, ...) become the command's own
 * one-line error, `fail(message)`; every other failure passes through.
 */
export const refusalsAs = <Refused extends Error, Failure>(
  refused: abstract new(...args: ReadonlyArray<any>) => Refused,
  fail: (message: string) => Effect.Effect<never, Failure>
) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, Refused> | Failure, R> =>
  Effect.catchIf(self, (e): e is Extract<E, Refused> => e instanceof refused, (e) => fail(e.message)) as Effect.Effect<
    A,
    Exclude<E, Refused> | Failure,
    R
  >
