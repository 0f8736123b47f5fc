import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { ProductionVetting } from "../../../src/providers/custom/CustomProvidersLive.ts"
import { Resolver } from "../../../src/providers/custom/Resolver.ts"
import { makeHostVetting } from "../../../src/providers/custom/VettingPolicy.ts"

/** The production layers themselves (system resolver, production policy), on names /etc/hosts answers. */
describe("production vetting", () => {
  it("the system resolver answers every address of a name", async () => {
    const answers = await Effect.runPromise(
      Effect.flatMap(Resolver, (r) => r.resolve("localhost")).pipe(Effect.provide(Resolver.layer))
    )
    expect(answers.length).toBeGreaterThan(0)
    for (const answer of answers) expect(["127.0.0.1", "::1"]).toContain(answer)
  })

  it("refuses localhost, its trailing-dot form and every loopback literal without a test allowance", async () => {
    const verdicts = await Effect.runPromise(
      Effect.gen(function*() {
        const vet = yield* makeHostVetting
        return yield* Effect.forEach(["localhost", "127.0.0.1", "[::1]", "0x7f000001"], (host) => vet(host))
      }).pipe(Effect.provide(Layer.fresh(ProductionVetting)))
    )
    expect(verdicts.map((v) => v._tag)).toEqual(["Refused", "Refused", "Refused", "Refused"])
  })
})
