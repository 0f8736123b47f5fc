import { NodeSocket, NodeSocketServer } from "@effect/platform-node"
import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { RpcClient, RpcSerialization, RpcServer, RpcTest } from "effect/rpc"
import { TestConsole } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Test } from "../../../layers/Test.ts"
import { CustomProviderAdminClient } from "../../../src/admin/CustomProviderAdminRpcs.ts"
import { FirewallAdminClient } from "../../../src/admin/FirewallAdminRpcs.ts"
import { GatewayAdminRpcHandlers } from "../../../src/admin/GatewayAdminRpcHandlers.ts"
import { GatewayAdminClient, GatewayAdminRpcs } from "../../../src/admin/GatewayAdminRpcs.ts"
import { gatewayCommand } from "../../../src/cli/GatewayCommands.ts"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { ServiceKeys } from "../../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { cliRunner } from "../../support/cliRun.ts"

/** Every domain in memory: the unit-test application layer. */
const Services = Test

const Client = Layer.effect(GatewayAdminClient, RpcTest.makeClient(GatewayAdminRpcs)).pipe(
  Layer.provide(GatewayAdminRpcHandlers),
  // `gateway rule|policy|check` are covered by test/gateway/manage/cli.test.ts.
  Layer.merge(Layer.mock(FirewallAdminClient)({})),
  // `gateway custom-provider` is covered by test/gateway/custom/cli.test.ts.
  Layer.merge(Layer.mock(CustomProviderAdminClient)({}))
)

const TestLayer = Client.pipe(Layer.provideMerge(Services), Layer.provideMerge(TestConsole.layer))

/** Runs `vdb gateway <args>` with `stdin`; returns what it printed, or the error it failed with. */
const run = cliRunner(gatewayCommand)

describe("bin/vdb gateway (admin RPCs, in-process)", () => {
  layer(TestLayer, { excludeTestServices: true })((it) => {
    it.effect("service-key create and rotate print the key once; rotation retires the old key", () =>
      Effect.gen(function*() {
        const org = yield* (yield* Organizations).create({ name: "cli" })
        const keys = yield* ServiceKeys
        const created = yield* run(["service-key", "create", "--org", org.uuid, "--json"])
        assert.isUndefined(created.error)
        const { key } = JSON.parse(created.out.join("\n")) as { key: string }
        assert.match(key, /^vdb_sk_[0-9A-Za-z]{43}$/)
        assert.strictEqual(yield* keys.verify(org.uuid, key), "valid")

        const again = yield* run(["service-key", "create", "--org", org.uuid])
        assert.match(again.error!, /already has a service key; use rotate/)

        const rotated = yield* run(["service-key", "rotate", "--org", org.uuid])
        assert.isUndefined(rotated.error)
        assert.strictEqual(rotated.out.length, 1)
        const newKey = rotated.out[0]!
        assert.notStrictEqual(newKey, key)
        assert.strictEqual(yield* keys.verify(org.uuid, key), "invalid")
        assert.strictEqual(yield* keys.verify(org.uuid, newKey), "valid")
      }))

    it.effect("provider-key set reads stdin; list shows providers and timestamps only; delete removes", () =>
      Effect.gen(function*() {
        const org = yield* (yield* Organizations).create({ name: "vault-cli" })
        const vault = yield* ProviderKeys
        const set = yield* run(
          ["provider-key", "set", "--org", org.uuid, "--provider", "openai"],
          "sk-from-stdin-123\n"
        )
        assert.isUndefined(set.error)
        assert.strictEqual(Redacted.value(yield* vault.get(org.uuid, "openai")), "sk-from-stdin-123")

        const listed = yield* run(["provider-key", "list", "--org", org.uuid, "--json"])
        const rows = JSON.parse(listed.out.join("\n")) as Array<Record<string, string>>
        assert.deepStrictEqual(rows.map((r) => Object.keys(r).sort()), [["createdAt", "provider", "updatedAt"]])
        assert.strictEqual(rows[0]!.provider, "openai")
        assert.notInclude(listed.out.join("\n"), "sk-from-stdin")
        const table = yield* run(["provider-key", "list", "--org", org.uuid])
        assert.match(table.out.join("\n"), /^PROVIDER\s+CREATED\s+UPDATED\nopenai\s+\d{4}-/)

        const deleted = yield* run(["provider-key", "delete", "--org", org.uuid, "--provider", "openai"])
        assert.isUndefined(deleted.error)
        assert.strictEqual((yield* Effect.flip(vault.get(org.uuid, "openai")))._tag, "ProviderKeyMissing")
      }))

    it.effect("bad input fails with one clear line", () =>
      Effect.gen(function*() {
        const org = yield* (yield* Organizations).create({ name: "bad-input" })
        const cases: Array<[ReadonlyArray<string>, string, RegExp]> = [
          [["service-key", "create", "--org", "not-a-uuid"], "", /^--org: not a UUID: "not-a-uuid"$/],
          [
            ["service-key", "rotate", "--org", "6f1c2b9e-8d4a-4c1e-9b7a-2f3e4d5c6b7a"],
            "",
            /^organization 6f1c2b9e-.* does not exist$/
          ],
          [
            ["provider-key", "set", "--org", org.uuid, "--provider", "Nope!"],
            "sk-x",
            /^--provider: unknown provider "Nope!" \(known: openai, /
          ],
          // Slug-shaped: only the server knows the organization's custom providers.
          [
            ["provider-key", "set", "--org", org.uuid, "--provider", "nope"],
            "sk-x",
            /^unknown provider "nope" \(known: openai, .*custom provider/
          ],
          [["provider-key", "list", "--org", "6f1c2b9e-8d4a-4c1e-9b7a-2f3e4d5c6b7a"], "", /does not exist$/],
          [["provider-key", "set", "--org", org.uuid, "--provider", "groq"], "", /^no provider key on stdin/],
          [
            ["provider-key", "set", "--org", org.uuid, "--provider", "groq"],
            "vdb_sk_" + "a".repeat(43),
            /^that is a vdb service key/
          ]
        ]
        for (const [args, stdin, expected] of cases) {
          const result = yield* run(args, stdin)
          assert.isDefined(result.error, args.join(" "))
          assert.match(result.error!, expected)
          assert.notInclude(result.error!, "\n")
        }
      }))
  })
})

const socketDir = mkdtempSync(join(tmpdir(), "vdb-gw-admin-"))
const socketPath = join(socketDir, "admin.sock")
afterAll(() => rmSync(socketDir, { recursive: true, force: true }))

const SocketServer = RpcServer.layer(GatewayAdminRpcs).pipe(
  Layer.provide(GatewayAdminRpcHandlers),
  Layer.provide(RpcServer.layerProtocolSocketServer),
  Layer.provide(RpcSerialization.layerNdjson),
  Layer.provide(NodeSocketServer.layer({ path: socketPath }))
)

const SocketClient = Layer.effect(GatewayAdminClient, RpcClient.make(GatewayAdminRpcs)).pipe(
  Layer.provide(RpcClient.layerProtocolSocket()),
  Layer.provide(RpcSerialization.layerNdjson),
  Layer.provide(NodeSocket.layerNet({ path: socketPath }))
)

describe("gateway admin RPCs over a Unix socket (ndjson)", () => {
  layer(
    Layer.merge(SocketClient, SocketServer).pipe(Layer.provideMerge(Services)),
    { excludeTestServices: true }
  )((it) => {
    it.effect("carries keys and refusals through serialization", () =>
      Effect.gen(function*() {
        const client = yield* GatewayAdminClient
        const org = yield* (yield* Organizations).create({ name: "socket" })
        const { key } = yield* client.GatewayServiceKeyCreate({ org: org.uuid })
        assert.strictEqual(yield* (yield* ServiceKeys).verify(org.uuid, Redacted.value(key)), "valid")
        yield* client.GatewayProviderKeySet({ org: org.uuid, provider: "anthropic", key: Redacted.make("sk-ant-1") })
        const listed = yield* client.GatewayProviderKeyList({ org: org.uuid })
        assert.deepStrictEqual(listed.map((e) => e.provider), ["anthropic"])
        const refused = yield* Effect.flip(client.GatewayServiceKeyCreate({ org: org.uuid }))
        assert.strictEqual(refused._tag, "GatewayAdminError")
        assert.match(refused.message, /already has a service key/)
        const unknown = yield* Effect.flip(client.GatewayProviderKeyDelete({ org: org.uuid, provider: "nope" }))
        assert.match(unknown.message, /unknown provider "nope"/)
      }))
  })
})
