import { assert, describe as effectDescribe, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { RpcTest } from "effect/rpc"
import { TestConsole } from "effect/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Test } from "../../../layers/Test.ts"
import { isRefused, KIRO_IDC_NEEDS_CLIENT, KIRO_SIGN_IN_EXPECTED, parseKiroSignIn } from "../../../schema/KiroSignIn.ts"
import { CustomProviderAdminClient } from "../../../src/admin/CustomProviderAdminRpcs.ts"
import { FirewallAdminClient } from "../../../src/admin/FirewallAdminRpcs.ts"
import { GatewayAdminRpcHandlers } from "../../../src/admin/GatewayAdminRpcHandlers.ts"
import { GatewayAdminClient, GatewayAdminRpcs } from "../../../src/admin/GatewayAdminRpcs.ts"
import { formatApiKey } from "../../../src/auth/ApiKey.ts"
import { gatewayCommand } from "../../../src/cli/GatewayCommands.ts"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { cliRunner } from "../../support/cliRun.ts"
import { PostgresTest } from "../../support/database.ts"
import { type ManagedGateway, newOrg, startManagedGateway } from "../manage/harness.ts"

const SOCIAL = JSON.stringify({
  refreshToken: "aorAAAAAGsecret-refresh",
  authMethod: "social",
  profileArn: "arn:aws:codewhisperer:us-east-1:1:profile/P"
})

describe("KiroSignIn", () => {
  it("accepts social and idc sign-ins", () => {
    expect(isRefused(parseKiroSignIn(SOCIAL))).toBe(false)
    const idc = parseKiroSignIn(
      JSON.stringify({ refreshToken: "r", authMethod: "idc", clientId: "c", clientSecret: "s", region: "eu-central-1" })
    )
    expect(idc).toMatchObject({ authMethod: "idc", region: "eu-central-1" })
  })

  it("refuses anything else with one line that never quotes the value", () => {
    for (
      const value of [
        "sk-plain-api-key",
        "[]",
        "{}",
        `{"refreshToken":"r","authMethod":"password"}`,
        `{"refreshToken":"","authMethod":"social"}`,
        `{"refreshToken":"   ","authMethod":"social"}`
      ]
    ) {
      expect(parseKiroSignIn(value)).toEqual({ refused: KIRO_SIGN_IN_EXPECTED })
    }
    expect(parseKiroSignIn(`{"refreshToken":"r","authMethod":"idc","clientId":"c"}`)).toEqual({
      refused: KIRO_IDC_NEEDS_CLIENT
    })
    // The region becomes part of a host name: nothing but a region passes.
    expect(
      isRefused(
        parseKiroSignIn(
          `{"refreshToken":"r","authMethod":"idc","clientId":"c","clientSecret":"s","region":"evil.example/x"}`
        )
      )
    ).toBe(true)
    expect(KIRO_SIGN_IN_EXPECTED).not.toContain("\n")
  })

  it("an accessToken given with the sign-in is one that can be sent: visible ASCII, else the sign-in is refused", () => {
    const withToken = (accessToken: unknown) =>
      parseKiroSignIn(
        JSON.stringify({ refreshToken: "r", authMethod: "social", accessToken, expiresAt: "2099-01-01T00:00:00Z" })
      )
    expect(withToken("aoaAAAAAGtoken+/=.-_")).toMatchObject({ accessToken: "aoaAAAAAGtoken+/=.-_" })
    // Before: accepted, and with a far expiry every request was 502 until then, the refresh token unused.
    for (const bad of ["at-user\r\nx: 1", "at-€", "at\u0000user", "two words", "", 42, null]) {
      expect(withToken(bad)).toEqual({ refused: KIRO_SIGN_IN_EXPECTED })
    }
  })
})

const Client = Layer.effect(GatewayAdminClient, RpcTest.makeClient(GatewayAdminRpcs)).pipe(
  Layer.provide(GatewayAdminRpcHandlers),
  Layer.merge(Layer.mock(FirewallAdminClient)({})),
  Layer.merge(Layer.mock(CustomProviderAdminClient)({}))
)
const run = cliRunner(gatewayCommand)

/** `gateway provider-key set --provider kiro` with `stdin`: the error message, if it failed. */
const setKiro = (org: string, stdin: string) =>
  Effect.map(run(["provider-key", "set", "--org", org, "--provider", "kiro"], stdin), (result) => result.error)

effectDescribe("bin/vdb gateway provider-key set --provider kiro", () => {
  layer(Client.pipe(Layer.provideMerge(Test), Layer.provideMerge(TestConsole.layer)), { excludeTestServices: true })(
    (it) => {
      it.effect("stores the sign-in JSON from stdin, and refuses anything else with one line", () =>
        Effect.gen(function*() {
          const org = yield* (yield* Organizations).create({ name: "kiro-cli" })
          assert.isUndefined(yield* setKiro(org.uuid, `${SOCIAL}\n`))
          assert.strictEqual(Redacted.value(yield* (yield* ProviderKeys).get(org.uuid, "kiro")), SOCIAL)

          const refused = yield* setKiro(org.uuid, "aorAAAAAGjust-a-refresh-token\n")
          assert.strictEqual(refused, KIRO_SIGN_IN_EXPECTED)
          assert.notInclude(refused!, "aorAAAAAGjust")
          assert.strictEqual(yield* setKiro(org.uuid, `{"refreshToken":"r","authMethod":"idc"}`), KIRO_IDC_NEEDS_CLIENT)
          // The refused values never replaced the stored sign-in.
          assert.strictEqual(Redacted.value(yield* (yield* ProviderKeys).get(org.uuid, "kiro")), SOCIAL)
        }))
    }
  )
})

describe("management API: PUT /manage/v1/provider-keys/kiro", () => {
  let gateway: ManagedGateway
  beforeAll(async () => {
    gateway = await startManagedGateway(PostgresTest)
  }, 60_000)
  afterAll(() => gateway?.close())

  const put = (org: { uuid: string; secret: string }, key: string) =>
    fetch(`${gateway.url}/manage/v1/provider-keys/kiro`, {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: formatApiKey(org.uuid, org.secret) },
      body: JSON.stringify({ key })
    })

  it("takes a sign-in and refuses a plain key with 400 invalid_provider_key", async () => {
    const org = await newOrg(gateway, "kiro manage")
    expect((await put(org, SOCIAL)).status).toBe(204)
    const refused = await put(org, "sk-plain-api-key-value")
    expect(refused.status).toBe(400)
    const text = await refused.text()
    expect(JSON.parse(text).error).toMatchObject({ code: "invalid_provider_key", message: KIRO_SIGN_IN_EXPECTED })
    expect(text).not.toContain("sk-plain-api-key-value")
    expect(Redacted.value(await Effect.runPromise(gateway.providerKeys.get(org.uuid, "kiro")))).toBe(SOCIAL)
  })
})
