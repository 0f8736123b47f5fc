import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { TestClock } from "effect/testing"
import { ApprovalThrottle, WRONG_CODES } from "../../src/device/ApprovalThrottle.ts"
import { DeviceError, ExpiredUserCode, UnknownUserCode, UsedUserCode } from "../../src/device/DeviceError.ts"

/**
 * The wrong-code throttle is one piece (ApprovalThrottle.guard) that every path taking a user code
 * runs through: only unknown codes spend the budget; once spent, the attempt does not run at all
 * and the answer says how long to wait; the window closes 15 minutes after the first wrong code.
 */
const failWith = (reason: UnknownUserCode | ExpiredUserCode | UsedUserCode) => Effect.fail(new DeviceError({ reason }))

describe("ApprovalThrottle.guard", () => {
  it.effect("ten unknown codes spend the budget; then nothing runs until the window closes", () =>
    Effect.gen(function*() {
      const throttle = yield* ApprovalThrottle
      const runs = yield* Ref.make(0)
      const counted = <A>(attempt: Effect.Effect<A, DeviceError>) =>
        Effect.andThen(Ref.update(runs, (n) => n + 1), attempt)
      // Expired and used codes are real codes: they cost nothing.
      for (const reason of [new ExpiredUserCode(), new UsedUserCode()]) {
        yield* Effect.flip(throttle.guard("m", failWith(reason)))
      }
      for (let i = 0; i < WRONG_CODES; i++) {
        const error = yield* Effect.flip(throttle.guard("m", counted(failWith(new UnknownUserCode()))))
        assert.strictEqual(error.reason._tag, "UnknownUserCode")
      }
      yield* TestClock.adjust("1 minute")
      const refused = yield* Effect.flip(throttle.guard("m", counted(Effect.succeed("decided"))))
      assert.strictEqual(refused.reason._tag, "TooManyWrongCodes")
      assert.strictEqual(refused.reason._tag === "TooManyWrongCodes" && refused.reason.retryAfter, 14 * 60)
      assert.strictEqual(yield* Ref.get(runs), WRONG_CODES)
      // Another member has a budget of their own.
      assert.strictEqual(yield* throttle.guard("other", Effect.succeed("decided")), "decided")
      yield* TestClock.adjust("14 minutes")
      assert.strictEqual(yield* throttle.guard("m", Effect.succeed("decided")), "decided")
    }).pipe(Effect.provide(ApprovalThrottle.layerMemory)))
})
