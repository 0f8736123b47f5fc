import { assert, describe, layer } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import { RpcTest } from "effect/rpc"
import { TestConsole } from "effect/testing"
import { Test } from "../../../layers/Test.ts"
import { GatewayPolicyEntry, type NewPolicyEntry } from "../../../schema/GatewayPolicy.ts"
import { gatewayCommand } from "../../../src/cli/GatewayCommands.ts"
import { CustomProviderAdminRpcHandlers } from "../../../src/gateway/custom/CustomProviderAdminRpcHandlers.ts"
import { CustomProviderAdminClient, CustomProviderAdminRpcs } from "../../../src/gateway/custom/CustomProviderAdminRpcs.ts"
import { CustomProviders } from "../../../src/gateway/custom/CustomProviders.ts"
import { FirewallAdminClient } from "../../../src/gateway/FirewallAdminRpcs.ts"
import { GatewayAdminClient } from "../../../src/gateway/GatewayAdminRpcs.ts"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { cliRunner } from "../../support/cliRun.ts"

/**
 * `bin/vdb gateway policy allow|deny|strip` refuses a provider slug (`--provider`, or the value of
 * `--kind provider`) that is neither built in nor one of the organization's custom providers, before
 * asking the server to store the entry: a typo like `opnai` was stored and never applied.
 */

/** What reached the server's `FirewallPolicyAdd`. */
const added: Array<NewPolicyEntry> = []

const Firewall = Layer.mock(FirewallAdminClient)({
  // The client's signature is generic over `discard`, which this command never sets.
  FirewallPolicyAdd: (({ entry, org }: { readonly org: string; readonly entry: NewPolicyEntry }) =>
    Effect.sync(() => {
      added.push(entry)
      return new GatewayPolicyEntry({
        uuid: "00000000-0000-4000-8000-000000000000",
        org_uuid: org,
        kind: entry.kind,
        effect: entry.effect,
        provider: entry.provider ?? null,
        value: entry.value,
        created_at: DateTime.nowUnsafe()
      })
    })) as FirewallAdminClient["Service"]["FirewallPolicyAdd"]
})

const Clients = Layer.mergeAll(
  Layer.effect(CustomProviderAdminClient, RpcTest.makeClient(CustomProviderAdminRpcs)).pipe(Layer.provide(CustomProviderAdminRpcHandlers)),
  Firewall,
  Layer.mock(GatewayAdminClient)({})
)

const run = cliRunner(gatewayCommand)

/** Runs `gateway policy ARGS…` for each command line in turn: what each failed with, if anything. */
const policyErrors = (commandLines: ReadonlyArray<ReadonlyArray<string>>) =>
  Effect.forEach(commandLines, (args) => Effect.map(run(["policy", ...args]), (result) => result.error))

describe("bin/vdb gateway policy with provider slugs", () => {
  layer(Clients.pipe(Layer.provideMerge(Test), Layer.provideMerge(TestConsole.layer)), { excludeTestServices: true })((it) => {
    it.effect("refuses an unknown slug in one line naming the known ones, and sends nothing", () =>
      Effect.gen(function*() {
        const org = yield* (yield* Organizations).create({ name: "typos" })
        added.length = 0
        const errors = yield* policyErrors([
          ["deny", "--org", org.uuid, "--kind", "provider", "opnai"],
          ["allow", "--org", org.uuid, "--kind", "provider", "NoSuch"],
          ["deny", "--org", org.uuid, "--kind", "model", "--provider", "opnai", "gpt-4o"],
          ["strip", "--org", org.uuid, "--kind", "tool", "--provider", "nosuch", "shell"]
        ])
        for (const error of errors) {
          assert.match(error ?? "", /^unknown provider "(opnai|nosuch)" \(known: openai, anthropic, .*, or a custom provider of the organization\)$/)
        }
        assert.deepStrictEqual(added, [])
      }))

    it.effect("takes built-in slugs and the organization's own custom providers, not another's", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const org = yield* orgs.create({ name: "owners" })
        const stranger = yield* orgs.create({ name: "strangers" })
        yield* (yield* CustomProviders).add(org.uuid, { slug: "acme-llm", base_url: "https://93.184.216.34/v1", surfaces: ["chat"] })
        added.length = 0
        const errors = yield* policyErrors([
          ["deny", "--org", org.uuid, "--kind", "provider", "Groq"],
          ["deny", "--org", org.uuid, "--kind", "provider", "acme-llm"],
          ["allow", "--org", org.uuid, "--kind", "model", "--provider", "acme-llm", "m-1"],
          ["deny", "--org", org.uuid, "--kind", "tool", "shell"]
        ])
        assert.deepStrictEqual(errors, [undefined, undefined, undefined, undefined])
        assert.deepStrictEqual(added.map((e) => [e.kind, e.provider, e.value]), [
          ["provider", undefined, "Groq"],
          ["provider", undefined, "acme-llm"],
          ["model", "acme-llm", "m-1"],
          ["tool", undefined, "shell"]
        ])
        const theirs = yield* run(["policy", "deny", "--org", stranger.uuid, "--kind", "model", "--provider", "acme-llm", "m-1"])
        assert.match(theirs.error ?? "", /^unknown provider "acme-llm"/)
        const unknownOrg = yield* run(["policy", "deny", "--org", "6f1c2b9e-8d4a-4c1e-9b7a-2f3e4d5c6b7a", "--kind", "provider", "acme-llm"])
        assert.match(unknownOrg.error ?? "", /does not exist$/)
        assert.strictEqual(added.length, 4)
      }))
  })
})
