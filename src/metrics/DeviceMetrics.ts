import { Effect, Metric } from "effect"

/**
 * Device grants in /metrics (docs/operations.md, "Site and MCP"): grants authorized, approved and
 * denied, and the token endpoint's poll answers by RFC 8628 outcome (`issued` is a redemption).
 */
const grants = Object.fromEntries((["authorized", "approved", "denied"] as const).map((outcome) => [
  outcome,
  Metric.counter("vdb_device_grants_total", {
    description: "Device grants by step: authorized (a device asked), approved, denied",
    incremental: true,
    attributes: { outcome }
  })
])) as Record<"authorized" | "approved" | "denied", Metric.Counter<number>>

const polls = new Map<string, Metric.Counter<number>>()
const pollCounter = (outcome: string) => {
  let counter = polls.get(outcome)
  if (counter === undefined) {
    polls.set(
      outcome,
      counter = Metric.counter("vdb_device_token_polls_total", {
        description:
          "Device token polls by answer: issued (redeemed), authorization_pending, slow_down, access_denied, expired_token, invalid_grant",
        incremental: true,
        attributes: { outcome }
      })
    )
  }
  return counter
}

interface Grants<A, B, C, D, E1, E2, E3, E4> {
  authorize(client: A): Effect.Effect<B, E1>
  approve(userCode: string, memberUuid: string): Effect.Effect<C, E2>
  deny(userCode: string, memberUuid: string): Effect.Effect<C, E3>
  poll(deviceCode: string): Effect.Effect<D & { readonly _tag: string }, E4>
}

/** The same grant service, counting each successful step and each poll's answer (the tags are RFC 8628's, a fixed set). */
export const withGrantMetrics = <S extends Grants<any, any, any, any, any, any, any, any>>(service: S): S => ({
  ...service,
  authorize: (client: Parameters<S["authorize"]>[0]) =>
    Effect.tap(service.authorize(client), () => Metric.update(grants.authorized, 1)),
  approve: (userCode: string, memberUuid: string) =>
    Effect.tap(service.approve(userCode, memberUuid), () => Metric.update(grants.approved, 1)),
  deny: (userCode: string, memberUuid: string) =>
    Effect.tap(service.deny(userCode, memberUuid), () => Metric.update(grants.denied, 1)),
  poll: (deviceCode: string) =>
    Effect.tap(service.poll(deviceCode), (outcome) => Metric.update(pollCounter(outcome._tag), 1))
})
