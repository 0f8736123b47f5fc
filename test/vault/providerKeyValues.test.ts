import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { RpcTest } from "effect/rpc"
import { TestConsole } from "effect/testing"
import { Test } from "../../layers/Test.ts"
import { CustomProviderAdminClient } from "../../src/admin/CustomProviderAdminRpcs.ts"
import { FirewallAdminClient } from "../../src/admin/FirewallAdminRpcs.ts"
import { GatewayAdminRpcHandlers } from "../../src/admin/GatewayAdminRpcHandlers.ts"
import { GatewayAdminClient, GatewayAdminRpcs } from "../../src/admin/GatewayAdminRpcs.ts"
import { gatewayCommand } from "../../src/cli/GatewayCommands.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { ProviderKeys } from "../../src/vault/ProviderKeys.ts"
import { cliRunner } from "../support/cliRun.ts"

/**
 * `bin/vdb gateway provider-key set` and the admin RPC behind it refuse a key that is no valid HTTP
 * header value (a two-line key file, CR/LF, NUL): stored, it made every relayed request fail.
 */

const Client = Layer.effect(GatewayAdminClient, RpcTest.makeClient(GatewayAdminRpcs)).pipe(
  Layer.provide(GatewayAdminRpcHandlers),
  Layer.merge(Layer.mock(FirewallAdminClient)({})),
  Layer.merge(Layer.mock(CustomProviderAdminClient)({}))
)

const run = cliRunner(gatewayCommand)

const MARKER = "SECRET-MARKER"

describe("provider keys that are no valid header value", () => {
  layer(Client.pipe(Layer.provideMerge(Test), Layer.provideMerge(TestConsole.layer)), { excludeTestServices: true })(
    (it) => {
      it.effect("provider-key set refuses them in one line, naming no part of the key, and stores nothing", () =>
        Effect.gen(function*() {
          const org = yield* (yield* Organizations).create({ name: "two-line key" })
          for (
            const stdin of [
              `sk-${MARKER}-1\nsk-line2\n`,
              `sk-${MARKER}\r\nX-Injected: 1\n`,
              `sk-${MARKER}\u0000x`,
              `sk-${MARKER}\u007fx`
            ]
          ) {
            const result = yield* run(["provider-key", "set", "--org", org.uuid, "--provider", "openai"], stdin)
            assert.match(result.error ?? "", /^the provider key is not a valid HTTP header value/)
            assert.notInclude(result.error!, "\n")
            assert.notInclude([result.error!, ...result.out, ...result.err].join(" "), MARKER)
          }
          const missing = yield* Effect.flip((yield* ProviderKeys).get(org.uuid, "openai"))
          assert.strictEqual(missing._tag, "ProviderKeyMissing")
        }))

      it.effect("the admin RPC refuses them itself, whatever client sends them", () =>
        Effect.gen(function*() {
          const org = yield* (yield* Organizations).create({ name: "rpc key" })
          const client = yield* GatewayAdminClient
          const refused = yield* Effect.flip(
            client.GatewayProviderKeySet({
              org: org.uuid,
              provider: "anthropic",
              key: Redacted.make(`sk-ant-${MARKER}\r\nx`)
            })
          )
          assert.strictEqual(refused._tag, "GatewayAdminError")
          assert.strictEqual(refused.reason._tag, "InvalidProviderKey")
          assert.match(refused.message, /not a valid HTTP header value/)
          assert.notInclude(refused.message, MARKER)
          assert.deepStrictEqual(yield* client.GatewayProviderKeyList({ org: org.uuid }), [])
        }))

      // A key ending in a newline (echo) is still taken, trimmed: test/gateway/keys/gatewayCommands.test.ts.
      it.effect("still takes a kiro sign-in spread over several lines: it is JSON, never a header", () =>
        Effect.gen(function*() {
          const org = yield* (yield* Organizations).create({ name: "kiro sign-in" })
          const signIn = `${JSON.stringify({ refreshToken: "r-token", authMethod: "social" }, null, 2)}\n`
          const stored = yield* run(["provider-key", "set", "--org", org.uuid, "--provider", "kiro"], signIn)
          assert.isUndefined(stored.error)
          assert.strictEqual(Redacted.value(yield* (yield* ProviderKeys).get(org.uuid, "kiro")), signIn.trim())
        }))
    }
  )
})
