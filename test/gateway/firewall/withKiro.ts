import { Redacted } from "effect"
import { type KiroGateway, ORG as KIRO_ORG, REFRESH_TOKEN, startKiroGateway } from "../kiro/harness.ts"
import { type FirewallGateway, ORG, run, startFirewallGateway } from "./harness.ts"

/**
 * The firewall gateway with the real guardrail engine, and the Kiro gateway with a stored
 * sign-in: every surface through the real request path, each with a stub provider that
 * records what reached it.
 */
export interface Gateways {
  readonly gateway: FirewallGateway
  readonly kiro: KiroGateway
  /** Removes every guardrail rule and forgets what the providers received. */
  reset(): Promise<void>
  close(): Promise<void>
}

export const startGateways = async (): Promise<Gateways> => {
  const [gateway, kiro] = await Promise.all([startFirewallGateway({ realGuardrails: true }), startKiroGateway()])
  await run(
    kiro.vault.set(
      KIRO_ORG,
      "kiro",
      Redacted.make(JSON.stringify({ refreshToken: REFRESH_TOKEN, authMethod: "social" }))
    )
  )
  return {
    gateway,
    kiro,
    reset: async () => {
      gateway.upstream.reset()
      kiro.kiro.reset()
      for (const rule of await run(gateway.guardrails.list(ORG))) await run(gateway.guardrails.remove(ORG, rule.uuid))
      for (const rule of await run(kiro.guardrails.list(KIRO_ORG))) {
        await run(kiro.guardrails.remove(KIRO_ORG, rule.uuid))
      }
    },
    close: async () => {
      await Promise.all([gateway.close(), kiro.close()])
    }
  }
}
