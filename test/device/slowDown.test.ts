import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { type RunningServer, startServer, tempDataDir } from "../support/processes.ts"
import { DEVICE_GRANT, postForm, postJson } from "./http.ts"

/**
 * RFC 8628 §3.5 enforced on the server, across processes: two `bin/vdb serve site` on one
 * PostgreSQL, a client polling one and then the other. The raised interval lives in the grant's
 * row, so the process that did not say slow_down holds the client to it as well. Interval 2 s
 * (a second poll within 1.5 s is slow_down), so a loaded machine does not spread the racing polls past it.
 */
describe("slow_down raises the interval on every process (PostgreSQL)", () => {
  const scope = Effect.runSync(Scope.make())
  let a: RunningServer
  let b: RunningServer

  beforeAll(async () => {
    const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    const shared = {
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_LOG_LEVEL: "Warn",
      VDB_DEVICE_POLL_INTERVAL: "2 seconds"
    }
    // A first: it runs the migrations B then finds done.
    a = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["site"])
    b = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["site"])
  }, 120_000)

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  const poll = async (server: RunningServer, deviceCode: string) => {
    const reply = await postForm(server.ports.site, "/api/site/v1/cli/device/token", {
      grant_type: DEVICE_GRANT,
      device_code: deviceCode
    })
    return String(reply.json?.error)
  }
  const sleep = (millis: number) => new Promise((r) => setTimeout(r, millis))

  it("a poll after the old interval but before the raised one is slow_down again, on either process", async () => {
    const grant = await postJson(a.ports.site, "/api/site/v1/cli/device/authorize", {})
    assert.strictEqual(grant.status, 200, grant.text)
    const code = grant.json.device_code as string
    assert.strictEqual(grant.json.interval, 2)
    assert.strictEqual(await poll(a, code), "authorization_pending")
    // Too soon, on B: slow_down, and the interval is now 7 s.
    assert.strictEqual(await poll(b, code), "slow_down")
    // 2.5 s later, on A: past the old interval, well short of the raised one.
    await sleep(2_500)
    assert.strictEqual(await poll(a, code), "slow_down")
  }, 30_000)

  it("of concurrent polls on both processes one is authorization_pending, the others slow_down", async () => {
    const grant = await postJson(b.ports.site, "/api/site/v1/cli/device/authorize", {})
    const code = grant.json.device_code as string
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => poll(i % 2 === 0 ? a : b, code)))
    assert.strictEqual(answers.filter((e) => e === "authorization_pending").length, 1, answers.join())
    assert.strictEqual(answers.filter((e) => e === "slow_down").length, 9, answers.join())
  }, 30_000)
})
