import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { RpcTest } from "effect/rpc"
import { TestConsole } from "effect/testing"
import { Test } from "../../../layers/Test.ts"
import { CustomProviderAdminRpcHandlers } from "../../../src/admin/CustomProviderAdminRpcHandlers.ts"
import { CustomProviderAdminClient, CustomProviderAdminRpcs } from "../../../src/admin/CustomProviderAdminRpcs.ts"
import { FirewallAdminClient } from "../../../src/admin/FirewallAdminRpcs.ts"
import { GatewayAdminRpcHandlers } from "../../../src/admin/GatewayAdminRpcHandlers.ts"
import { GatewayAdminClient, GatewayAdminRpcs } from "../../../src/admin/GatewayAdminRpcs.ts"
import { gatewayCommand } from "../../../src/cli/GatewayCommands.ts"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { CustomProviders } from "../../../src/providers/custom/CustomProviders.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { cliRunner } from "../../support/cliRun.ts"

const Clients = Layer.mergeAll(
  Layer.effect(CustomProviderAdminClient, RpcTest.makeClient(CustomProviderAdminRpcs)).pipe(
    Layer.provide(CustomProviderAdminRpcHandlers)
  ),
  Layer.effect(GatewayAdminClient, RpcTest.makeClient(GatewayAdminRpcs)).pipe(Layer.provide(GatewayAdminRpcHandlers)),
  Layer.mock(FirewallAdminClient)({})
)

const TestLayer = Clients.pipe(Layer.provideMerge(Test), Layer.provideMerge(TestConsole.layer))

const run = cliRunner(gatewayCommand)

describe("bin/vdb gateway custom-provider (admin RPCs, in-process)", () => {
  layer(TestLayer, { excludeTestServices: true })((it) => {
    it.effect("add, list, provider-key set for the custom slug, remove", () =>
      Effect.gen(function*() {
        const org = yield* (yield* Organizations).create({ name: "custom-cli" })
        const other = yield* (yield* Organizations).create({ name: "custom-cli-other" })
        const added = yield* run([
          "custom-provider",
          "add",
          "--org",
          org.uuid,
          "--slug",
          "acme-llm",
          "--url",
          "https://93.184.216.34/v1",
          "--surface",
          "chat,responses",
          "--auth",
          "x-api-key",
          "--header",
          "x-version: 7",
          "--json"
        ])
        assert.isUndefined(added.error)
        const created = JSON.parse(added.out.join("\n")) as Record<string, unknown>
        assert.deepInclude(created, {
          org_uuid: org.uuid,
          slug: "acme-llm",
          base_url: "https://93.184.216.34/v1",
          surfaces: ["chat", "responses"],
          auth: "x-api-key",
          default_headers: { "x-version": "7" }
        })

        const listed = yield* run(["custom-provider", "list", "--org", org.uuid])
        assert.match(
          listed.out.join("\n"),
          /^SLUG\s+BASE URL\s+SURFACES\s+AUTH\s+CREATED\nacme-llm\s+https:\/\/93\.184\.216\.34\/v1\s+chat,responses\s+x-api-key/
        )

        const set = yield* run(["provider-key", "set", "--org", org.uuid, "--provider", "acme-llm"], "sk-acme-123\n")
        assert.isUndefined(set.error)
        assert.strictEqual(Redacted.value(yield* (yield* ProviderKeys).get(org.uuid, "acme-llm")), "sk-acme-123")
        const foreign = yield* run(["provider-key", "set", "--org", other.uuid, "--provider", "acme-llm"], "sk-x\n")
        assert.match(foreign.error!, /^unknown provider "acme-llm"/)

        const removed = yield* run(["custom-provider", "remove", "--org", org.uuid, "--slug", "acme-llm"])
        assert.isUndefined(removed.error)
        assert.deepStrictEqual(yield* (yield* CustomProviders).list(org.uuid), [])
        assert.strictEqual(
          (yield* Effect.flip((yield* ProviderKeys).get(org.uuid, "acme-llm")))._tag,
          "ProviderKeyMissing"
        )
        const again = yield* run(["custom-provider", "remove", "--org", org.uuid, "--slug", "acme-llm"])
        assert.match(again.error!, /^no custom provider "acme-llm" in this organization$/)
      }))

    it.effect("bad input fails with one clear line", () =>
      Effect.gen(function*() {
        const org = yield* (yield* Organizations).create({ name: "custom-bad" })
        const add = (...extra: Array<string>) => ["custom-provider", "add", "--org", org.uuid, ...extra]
        const cases: Array<[ReadonlyArray<string>, RegExp]> = [
          [
            add("--slug", "k", "--url", "https://93.184.216.34", "--surface", "kiro"),
            /^--surface: a custom provider cannot serve the kiro surface$/
          ],
          [
            add("--slug", "k", "--url", "https://93.184.216.34", "--surface", "chat,fax"),
            /^--surface: "fax" is not one of chat, responses, messages$/
          ],
          [
            add("--slug", "anthropic", "--url", "https://93.184.216.34", "--surface", "chat"),
            /^slug "anthropic" is a built-in provider$/
          ],
          [add("--slug", "k", "--url", "http://93.184.216.34", "--surface", "chat"), /^base_url must be https$/],
          [
            add("--slug", "k", "--url", "https://192.168.0.10", "--surface", "chat"),
            /^base_url: 192\.168\.0\.10 is not a public address \(private \(RFC 1918\)\)$/
          ],
          [
            add("--slug", "k", "--url", "https://llm.example.com", "--surface", "chat"),
            /^base_url: llm\.example\.com must resolve, and only to public addresses$/
          ],
          [
            add("--slug", "k", "--url", "https://93.184.216.34", "--surface", "chat", "--auth", "basic"),
            /^auth "basic": use bearer, x-api-key or header:<name>$/
          ],
          [["custom-provider", "list", "--org", "nope"], /^--org: not a UUID: "nope"$/],
          [
            ["custom-provider", "list", "--org", "6f1c2b9e-8d4a-4c1e-9b7a-2f3e4d5c6b7a"],
            /^organization 6f1c2b9e-.* does not exist$/
          ]
        ]
        for (const [args, expected] of cases) {
          const result = yield* run(args)
          assert.isDefined(result.error, args.join(" "))
          assert.match(result.error!, expected)
          assert.notInclude(result.error!, "\n")
        }
      }))
  })
})
