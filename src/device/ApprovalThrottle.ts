import { Clock, Context, Effect, Layer } from "effect"
import { makeFailureWindows, waitOf } from "../db/FailureWindows.ts"
import { DeviceError, TooManyWrongCodes } from "./DeviceError.ts"

/**
 * Wrong user codes entered by one member: after 10 within 15 minutes the
 * member must wait for the window to close (429 / an error on the page), so
 * a signed-in account cannot walk the code space. `layer` keeps the counts in the database, so
 * every process behind a proxy counts the same wrong codes; `layerMemory` keeps them in the
 * process (tests).
 */
export const WRONG_CODES = 10
export const WRONG_CODE_WINDOW_MILLIS = 15 * 60 * 1000

export class ApprovalThrottle extends Context.Service<ApprovalThrottle, {
  /**
   * Runs `attempt` (anything that takes a user code: the code form, the decision form, the JSON
   * approve and deny) under the member's budget. Once it is spent the attempt does not run and the
   * answer is `TooManyWrongCodes`; an attempt that fails with `UnknownUserCode` spends one.
   */
  guard<A, R>(memberUuid: string, attempt: Effect.Effect<A, DeviceError, R>): Effect.Effect<A, DeviceError, R>
}>()("vdb/device/ApprovalThrottle") {
  static readonly layerMemory = Layer.sync(ApprovalThrottle, () => {
    const windows = new Map<string, { start: number; wrong: number }>()
    // Reads only: a window is made by a wrong code, never by asking.
    const waitFor = (member: string, now: number) => {
      const w = windows.get(member)
      if (w === undefined || now - w.start >= WRONG_CODE_WINDOW_MILLIS || w.wrong < WRONG_CODES) return undefined
      return Math.max(1, Math.ceil((w.start + WRONG_CODE_WINDOW_MILLIS - now) / 1000))
    }
    const wrongCode = (member: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const w = windows.get(member)
        if (w !== undefined && now - w.start < WRONG_CODE_WINDOW_MILLIS) w.wrong++
        else windows.set(member, { start: now, wrong: 1 })
      })
    return ApprovalThrottle.of({
      guard: (member, attempt) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const wait = waitFor(member, now)
          if (wait !== undefined) {
            return Effect.fail(new DeviceError({ reason: new TooManyWrongCodes({ retryAfter: wait }) }))
          }
          return Effect.tapError(attempt, (error) =>
            error.reason._tag === "UnknownUserCode" ? wrongCode(member) : Effect.void)
        })
    })
  })

  static readonly layer = Layer.effect(
    ApprovalThrottle,
    Effect.gen(function*() {
      const windows = yield* makeFailureWindows(WRONG_CODE_WINDOW_MILLIS, WRONG_CODES)
      return ApprovalThrottle.of({
        guard: (member, attempt) => {
          const key = `m:${member}`
          return Effect.flatMap(windows.open([key]), ({ now, windows: open }) => {
            const wait = waitOf(open.get(key), WRONG_CODES, WRONG_CODE_WINDOW_MILLIS, now)
            if (wait > 0) return Effect.fail(new DeviceError({ reason: new TooManyWrongCodes({ retryAfter: wait }) }))
            return Effect.tapError(
              attempt,
              (error) => error.reason._tag === "UnknownUserCode" ? windows.failed([key]) : Effect.void
            )
          })
        }
      })
    })
  )
}
