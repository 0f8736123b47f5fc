import { afterAll, beforeAll, beforeEach } from "vitest"
import type { NewPolicyEntry } from "../../../schema/GatewayPolicy.ts"
import { type FirewallGateway, ORG, run, SERVICE_KEY, startFirewallGateway } from "./harness.ts"

/**
 * A firewall gateway for one test file, reset before each test, with the two
 * things a policy test does to it: add an entry, post a JSON body.
 */
export const policyGateway = () => {
  let gateway: FirewallGateway | undefined
  beforeAll(async () => {
    gateway = await startFirewallGateway()
  })
  afterAll(() => gateway?.close())
  beforeEach(() => gateway!.reset())
  const current = () => gateway!
  return {
    current,
    add: (entry: NewPolicyEntry) => run(current().policies.add(ORG, entry)),
    post: (path: string, body: unknown) =>
      fetch(`${current().url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body)
      })
  }
}
