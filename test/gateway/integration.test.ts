import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { GatewayRoutes } from "../../src/gateway/GatewayRoutes.ts"
import { InferenceLog } from "../../src/inference/InferenceLog.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { ServiceKeys } from "../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../../src/vault/ProviderKeys.ts"
import { PostgresTest } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"
import { type FakeUpstream, startFakeUpstream } from "./upstreams/FakeUpstream.ts"

/** `GatewayRoutes` as the server mounts it, on the real key services and PostgreSQL. */
describe("GatewayRoutes on PostgreSQL with the real key services", () => {
  let upstream: FakeUpstream
  let scope: Scope.Closeable
  let context: Context.Context<Organizations | ServiceKeys | ProviderKeys | InferenceLog | HttpServer.HttpServer>
  let url = ""

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    const keyServices = Layer.mergeAll(ServiceKeys.layer, ProviderKeys.layer, InferenceLog.layer).pipe(
      Layer.provideMerge(Organizations.layer),
      Layer.provideMerge(Layer.merge(PostgresTest, SecretBoxTest))
    )
    const app = HttpRouter.serve(GatewayRoutes, { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(keyServices),
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
      Layer.provide(
        ConfigProvider.layer(ConfigProvider.fromUnknown({ VDB_PROVIDER_OPENAI_BASE_URL: `${upstream.url}/v1` }))
      )
    )
    scope = await Effect.runPromise(Scope.make())
    context = await Effect.runPromise(Layer.buildWithScope(app, scope))
    const { address } = Context.get(context, HttpServer.HttpServer)
    url = `http://127.0.0.1:${"port" in address ? address.port : 0}`
  })
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await upstream.close()
  })

  it("relays with an issued service key and a vaulted provider key, and logs when enabled", async () => {
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
    const orgs = Context.get(context, Organizations)
    const inferenceLog = Context.get(context, InferenceLog)
    const org = await run(orgs.create({ name: "gateway it" }))
    const { key } = await run(Context.get(context, ServiceKeys).issue(org.uuid))
    await run(Context.get(context, ProviderKeys).set(org.uuid, "openai", Redacted.make("sk-vaulted")))
    await run(inferenceLog.setEnabled(org.uuid, true))

    const client = new OpenAI({ apiKey: key, baseURL: `${url}/openai/${org.uuid}/v1`, maxRetries: 0 })
    const completion = await client.chat.completions.create({
      model: "gpt-4.1",
      messages: [{ role: "user", content: "hi" }]
    })
    expect(completion.choices[0]!.message.content).toBe("Hello from the fake upstream.")
    expect(upstream.received[0]!.headers.authorization).toBe("Bearer sk-vaulted")

    const nonces = await fetch(`${url}/openai/${org.uuid}/v1/nonces?count=2`, {
      headers: { authorization: `Bearer ${key}` }
    })
    expect(((await nonces.json()) as { nonces: Array<string> }).nonces).toHaveLength(2)

    const missing = await new OpenAI({ apiKey: key, baseURL: `${url}/groq/${org.uuid}/v1`, maxRetries: 0 })
      .chat.completions.create({ model: "llama", messages: [] }).catch((e) => e)
    expect(missing.status).toBe(403)
    expect(missing.code).toBe("provider_key_missing")

    let logged: ReadonlyArray<unknown> = []
    for (let i = 0; i < 50 && logged.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      logged = await run(inferenceLog.recent(org.uuid, 10))
    }
    expect(logged).toHaveLength(1)
  })
})
