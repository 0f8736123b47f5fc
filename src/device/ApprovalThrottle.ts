import { Clock, Context, Effect, Layer } from "effect"

/**
 * Wrong user codes entered by one member: after 10 within 15 minutes the
 * member must wait for the window to close (429 / an error on the page), so
 * a signed-in account cannot walk the code space. Per process.
 */
export const WRONG_CODES = 10
export const WRONG_CODE_WINDOW_MILLIS = 15 * 60 * 1000

export class ApprovalThrottle extends Context.Service<ApprovalThrottle, {
  /** Seconds to wait, or undefined when the member may try a code. */
  check(memberUuid: string): Effect.Effect<number | undefined>
  wrongCode(memberUuid: string): Effect.Effect<void>
}>()("vdb/device/ApprovalThrottle") {
  static readonly layerMemory = Layer.sync(ApprovalThrottle, () => {
    const windows = new Map<string, { start: number; wrong: number }>()
    const current = (member: string, now: number) => {
      const w = windows.get(member)
      if (w !== undefined && now - w.start < WRONG_CODE_WINDOW_MILLIS) return w
      const fresh = { start: now, wrong: 0 }
      windows.set(member, fresh)
      return fresh
    }
    return ApprovalThrottle.of({
      // Reads only: a window is made by a wrong code, never by asking.
      check: (member) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const w = windows.get(member)
          if (w === undefined || now - w.start >= WRONG_CODE_WINDOW_MILLIS) return undefined
          return w.wrong >= WRONG_CODES ? Math.max(1, Math.ceil((w.start + WRONG_CODE_WINDOW_MILLIS - now) / 1000)) : undefined
        }),
      wrongCode: (member) => Effect.map(Clock.currentTimeMillis, (now) => void current(member, now).wrong++)
    })
  })
}
