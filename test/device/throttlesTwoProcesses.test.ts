import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"
import { cookiesOf, postJson } from "./http.ts"

/**
 * The site's throttles (src/members/SignInThrottle.ts, src/device/ApprovalThrottle.ts) over two
 * `bin/vdb serve site` processes on one PostgreSQL, as behind a proxy: the failures a client
 * spreads over both count as if one process had seen them all.
 */
const PASSWORD = "correct horse battery"
const SESSION = "/api/site/v1/session"
const APPROVE = "/api/site/v1/cli/device/approve"

const scope = Effect.runSync(Scope.make())
let a: RunningServer
let b: RunningServer
let orgUuid: string

const newMember = async (email: string) => {
  const made = await runVdb(["member", "create", "--org", orgUuid, "--email", email], a.env, `${PASSWORD}\n`)
  assert.strictEqual(made.code, 0, made.stderr)
}

const signIn = (server: RunningServer, email: string, password: string, from: string) =>
  postJson(server.ports.site, SESSION, { email, password }, { from })

beforeAll(async () => {
  const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
  const shared = {
    DATABASE_URL: database.url,
    VDB_MASTER_KEY: randomBytes(32).toString("base64"),
    VDB_LOG_LEVEL: "Warn"
  }
  // A first: it runs the migrations B then finds done.
  a = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["site"])
  b = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["site"])
  const created = await runVdb(["org", "create", "--name", "throttles", "--json"], a.env)
  assert.strictEqual(created.code, 0, created.stderr)
  orgUuid = JSON.parse(created.stdout).uuid
}, 180_000)

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()])
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

describe("the site's throttles hold across processes", () => {
  it(
    "5 wrong passwords for one account, spread over both, refuse the next sign-in on either, the right password too",
    async () => {
      await newMember("spread@example.test")
      for (const [server, i] of [[a, 1], [b, 2], [a, 3], [b, 4], [a, 5]] as const) {
        const reply = await signIn(server, "spread@example.test", "wrong", `127.0.2.${i}`)
        assert.strictEqual(reply.status, 401, reply.text)
      }
      for (const server of [a, b]) {
        const refused = await signIn(server, "spread@example.test", PASSWORD, "127.0.2.9")
        assert.strictEqual(refused.status, 429, refused.text)
        assert.isAbove(Number(refused.headers["retry-after"]), 0)
      }
    },
    60_000
  )

  it(
    "20 failures from one address, spread over both, refuse that address on either; another address signs in",
    async () => {
      await newMember("address@example.test")
      const from = "127.0.3.1"
      // A different unknown account each time: only the address's count reaches its limit.
      for (let i = 0; i < 20; i++) {
        const reply = await signIn(i % 2 === 0 ? a : b, `nobody${i}@example.test`, "wrong", from)
        assert.strictEqual(reply.status, 401, reply.text)
      }
      for (const server of [a, b]) {
        const refused = await signIn(server, "address@example.test", PASSWORD, from)
        assert.strictEqual(refused.status, 429, refused.text)
      }
      assert.strictEqual((await signIn(b, "address@example.test", PASSWORD, "127.0.3.2")).status, 200)
    },
    120_000
  )

  it("10 wrong user codes, spread over both, refuse the member's next code on either", async () => {
    await newMember("codes@example.test")
    const signedIn = await signIn(a, "codes@example.test", PASSWORD, "127.0.4.1")
    assert.strictEqual(signedIn.status, 200, signedIn.text)
    const cookie = `vdb_session=${cookiesOf(signedIn)["vdb_session"]}`
    for (let i = 0; i < 10; i++) {
      const wrong = await postJson((i % 2 === 0 ? a : b).ports.site, APPROVE, { user_code: "BCDF-GHJK" }, {
        headers: { cookie }
      })
      assert.strictEqual(wrong.status, 404, wrong.text)
    }
    for (const server of [a, b]) {
      const refused = await postJson(server.ports.site, APPROVE, { user_code: "BCDF-GHJK" }, { headers: { cookie } })
      assert.strictEqual(refused.status, 429, refused.text)
      assert.strictEqual(refused.json.error, "too_many_attempts")
      assert.isAbove(Number(refused.headers["retry-after"]), 0)
    }
  }, 60_000)
})
