import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { cookiesOf, csrfIn, http, postForm, postJson } from "../device/http.ts"
import { throwawayDatabase } from "../support/database.ts"
import { NGINX, type RunningNginx, startNginx } from "../support/nginx.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * `bin/vdb serve --workers 2` on one PostgreSQL behind a real nginx on loopback. nginx connects
 * from 127.0.0.3, the only trusted proxy; test clients come from other 127.0.0.0/8 addresses.
 */
const PROXY = "127.0.0.3"
const AUTHORIZE = "/api/site/v1/cli/device/authorize"
const SESSION = "/api/site/v1/session"
const PASSWORD = "correct horse battery staple"

describe.skipIf(!existsSync(NGINX))("two workers behind nginx, one PostgreSQL", () => {
  const scope = Effect.runSync(Scope.make())
  let server: RunningServer
  let nginx: RunningNginx
  let org: { uuid: string; apiKey: string }
  const email = "proxy@example.test"

  beforeAll(async () => {
    const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    server = await startServer({
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_DATA_DIR: tempDataDir(),
      VDB_LOG_LEVEL: "Warn",
      VDB_WORKERS: "2",
      VDB_TRUSTED_PROXIES: `${PROXY}, ::1`
    }, ["api", "site"])
    nginx = await startNginx({ api: server.ports.api, site: server.ports.site }, PROXY)
    const created = await runVdb([
      "org",
      "create",
      "--name",
      "proxied",
      "--per-minute",
      "10",
      "--per-week",
      "0",
      "--json"
    ], server.env)
    assert.strictEqual(created.code, 0, created.stderr)
    org = JSON.parse(created.stdout)
    const member = await runVdb(
      ["member", "create", "--org", org.uuid, "--email", email, "--json"],
      server.env,
      `${PASSWORD}\n`
    )
    assert.strictEqual(member.code, 0, member.stderr)
  }, 120_000)

  afterAll(async () => {
    await nginx?.stop()
    await server?.stop()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  const authorize = (port: number, from: string, headers: Record<string, string> = {}) =>
    postJson(port, AUTHORIZE, {}, { from, headers: { "user-agent": "proxy-test/1.0", ...headers } })

  it("the device limiter counts the client behind nginx (12 a minute), not nginx; a forged X-Forwarded-For counts as its sender", async () => {
    const site = nginx.ports.site!
    const first = await Promise.all(Array.from({ length: 12 }, () => authorize(site, "127.0.0.21")))
    assert.deepStrictEqual(first.map((r) => r.status), Array(12).fill(200))
    assert.strictEqual((await authorize(site, "127.0.0.21")).status, 429)
    // Another client through the same nginx has its own allowance.
    assert.strictEqual((await authorize(site, "127.0.0.22")).status, 200)
    // Straight to vdb (an untrusted peer): its X-Forwarded-For is ignored, each call counts against 127.0.0.23.
    for (let i = 0; i < 12; i++) {
      const reply = await authorize(server.ports.site, "127.0.0.23", { "x-forwarded-for": `198.51.100.${i}` })
      assert.strictEqual(reply.status, 200, reply.text)
    }
    assert.strictEqual(
      (await authorize(server.ports.site, "127.0.0.23", { "x-forwarded-for": "198.51.100.99" })).status,
      429
    )
    // Through nginx, a client naming the exhausted address is still itself: nginx appends what it saw.
    assert.strictEqual((await authorize(site, "127.0.0.24", { "x-forwarded-for": "127.0.0.23" })).status, 200)
  })

  it("the approval page shows the client's address, not nginx's; URLs follow X-Forwarded-Proto only from nginx", async () => {
    const site = nginx.ports.site!
    const grant = (await authorize(site, "127.0.0.31")).json as { user_code: string; verification_uri: string }
    assert.strictEqual(grant.verification_uri, `http://127.0.0.1:${site}/device`)
    const httpsGrant = await authorize(site, "127.0.0.32", { "x-forwarded-proto": "https" })
    // nginx sets X-Forwarded-Proto to its own scheme (http here), replacing the client's.
    assert.strictEqual(httpsGrant.json.verification_uri, `http://127.0.0.1:${site}/device`)
    const direct = await authorize(server.ports.site, "127.0.0.33", { "x-forwarded-proto": "https" })
    assert.strictEqual(direct.json.verification_uri, `http://127.0.0.1:${server.ports.site}/device`)

    const signedIn = await postJson(site, SESSION, { email, password: PASSWORD }, { from: "127.0.0.34" })
    assert.strictEqual(signedIn.status, 200, signedIn.text)
    const cookie = `vdb_session=${cookiesOf(signedIn)["vdb_session"]}`
    const entry = await http(site, "GET", `/device?code=${grant.user_code}`, {
      headers: { cookie },
      from: "127.0.0.34"
    })
    assert.strictEqual(entry.status, 200, entry.text)
    const page = await postForm(site, "/device", { csrf: csrfIn(entry.text), code: grant.user_code }, {
      headers: { cookie },
      from: "127.0.0.34"
    })
    assert.strictEqual(page.status, 200, page.text)
    assert.include(page.text, "<dd>127.0.0.31</dd>")
    assert.notInclude(page.text, `<dd>${PROXY}</dd>`)
  })

  it("50 concurrent polls through nginx, spread over both workers, redeem an approved grant once", async () => {
    const site = nginx.ports.site!
    const grant = (await authorize(site, "127.0.0.51")).json as { device_code: string; user_code: string }
    const signedIn = await postJson(site, SESSION, { email, password: PASSWORD }, { from: "127.0.0.52" })
    const cookie = `vdb_session=${cookiesOf(signedIn)["vdb_session"]}`
    const approved = await postJson(site, "/api/site/v1/cli/device/approve", { user_code: grant.user_code }, {
      headers: { cookie },
      from: "127.0.0.52"
    })
    assert.strictEqual(approved.status, 200, approved.text)
    const polls = await Promise.all(
      Array.from(
        { length: 50 },
        () =>
          postJson(site, "/api/site/v1/cli/device/token", { device_code: grant.device_code }, { from: "127.0.0.51" })
      )
    )
    const issued = polls.filter((r) => r.status === 200)
    assert.strictEqual(issued.length, 1, polls.map((r) => `${r.status} ${r.json?.error ?? ""}`).join(","))
    assert.strictEqual(issued[0]!.json.api_key, org.apiKey)
  })

  it("a rotated secret and a deactivation are refused at once by both workers", async () => {
    const made = await runVdb(
      ["org", "create", "--name", "rotating", "--per-minute", "0", "--per-week", "0", "--json"],
      server.env
    )
    const rotating = JSON.parse(made.stdout) as { uuid: string; apiKey: string }
    const statuses = (apiKey: string) =>
      Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          http(nginx.ports.api!, "GET", "/v1/info/CVE-2021-44228", {
            headers: { authorization: apiKey },
            from: `127.0.0.${60 + i}`
          })
            .then((r) => r.status))
      )
    // Read (and cached) by both workers first: authentication before the lookup, so 404 means admitted.
    assert.deepStrictEqual(await statuses(rotating.apiKey), Array(8).fill(404))
    const rotated = await runVdb(["org", "rotate-secret", rotating.uuid, "--json"], server.env)
    assert.strictEqual(rotated.code, 0, rotated.stderr)
    const fresh = JSON.parse(rotated.stdout).apiKey as string
    assert.deepStrictEqual(await statuses(rotating.apiKey), Array(8).fill(401))
    assert.deepStrictEqual(await statuses(fresh), Array(8).fill(404))
    const deactivated = await runVdb(["org", "deactivate", rotating.uuid], server.env)
    assert.strictEqual(deactivated.code, 0, deactivated.stderr)
    assert.notInclude(await statuses(fresh), 404)
  })

  it("an organization's per-minute limit is exact across both workers", async () => {
    const replies = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        http(nginx.ports.api!, "GET", "/v1/info/CVE-2021-44228", {
          headers: { authorization: org.apiKey },
          from: `127.0.0.${40 + (i % 4)}`
        }))
    )
    const refused = replies.filter((r) => r.status === 429).length
    assert.strictEqual(replies.length - refused, 10, replies.map((r) => r.status).join(","))
  })
})
