import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"
import { cookieHeader, cookiesOf, csrfIn, DEVICE_GRANT, http, postForm, postJson, setCookieHeaders } from "./http.ts"

/**
 * What the attack on the site found (issue 33), over the real `bin/vdb serve site`: a Host header
 * steering `verification_uri`, a planted `vdb_csrf` cookie passing the forms when no `Origin` is
 * sent, a reload posting the decision again, a client name that reads as a verdict, and the page a
 * throttled member sees.
 */
let server: RunningServer
let site: number
let orgUuid: string
const PASSWORD = "correct horse battery"
const AUTHORIZE = "/api/site/v1/cli/device/authorize"

let nextAddress = 10
const authorize = async (body: unknown = {}) => {
  const reply = await postJson(site, AUTHORIZE, body, { from: `127.0.1.${nextAddress++}` })
  assert.strictEqual(reply.status, 200, reply.text)
  return reply.json as {
    device_code: string
    user_code: string
    verification_uri: string
    verification_uri_complete: string
  }
}

const poll = async (deviceCode: string) =>
  (await postForm(site, "/api/site/v1/cli/device/token", { grant_type: DEVICE_GRANT, device_code: deviceCode })).json
    ?.error ?? "issued"

let members = 0
/** A new member signed in through the JSON endpoint: the jar holds their session cookie. */
const signedInMember = async () => {
  const email = `attack${members++}@example.test`
  const made = await runVdb(["member", "create", "--org", orgUuid, "--email", email], server.env, `${PASSWORD}\n`)
  assert.strictEqual(made.code, 0, made.stderr)
  const reply = await postJson(site, "/api/site/v1/session", { email, password: PASSWORD })
  assert.strictEqual(reply.status, 200, reply.text)
  return { email, jar: { vdb_session: cookiesOf(reply)["vdb_session"]! } as Record<string, string> }
}

/** The token a signed-in member's pages carry; any cookie the page sets goes into the jar, as in a browser. */
const pageCsrf = async (jar: Record<string, string>) => {
  const page = await http(site, "GET", "/device", { headers: { cookie: cookieHeader(jar) } })
  assert.strictEqual(page.status, 200)
  Object.assign(jar, cookiesOf(page))
  return csrfIn(page.text)
}

const postPage = (path: string, form: Record<string, string>, jar: Record<string, string>) =>
  postForm(site, path, form, { headers: { cookie: cookieHeader(jar) } })

beforeAll(async () => {
  server = await startServer({ VDB_DATA_DIR: tempDataDir() }, ["site"])
  site = server.ports.site
  const created = await runVdb(["org", "create", "--name", "attacks", "--json"], server.env)
  assert.strictEqual(created.code, 0, created.stderr)
  orgUuid = JSON.parse(created.stdout).uuid
}, 120_000)

afterAll(async () => {
  await server?.stop()
})

describe("verification_uri", () => {
  it("names the site's own address when Host is not a valid host[:port]; a valid one is used", async () => {
    for (const host of ["a@b", "a@b:1", "evil.example/x", "a b", "x\"y", "[::1", "-x.example", "a".repeat(300)]) {
      const reply = await http(site, "POST", AUTHORIZE, {
        headers: { host, "content-type": "application/json" },
        body: "{}",
        from: `127.0.1.${nextAddress++}`
      })
      assert.strictEqual(reply.status, 200, reply.text)
      assert.strictEqual(reply.json.verification_uri, `http://127.0.0.1:${site}/device`, JSON.stringify(host))
      assert.isTrue(reply.json.verification_uri_complete.startsWith(`http://127.0.0.1:${site}/device?code=`), host)
    }
    const named = await http(site, "POST", AUTHORIZE, {
      headers: { host: "vdb.test:8082", "content-type": "application/json" },
      body: "{}",
      from: `127.0.1.${nextAddress++}`
    })
    assert.strictEqual(named.json.verification_uri, "http://vdb.test:8082/device")
  })
})

describe("the forms' CSRF token belongs to the session", () => {
  it("signing in through the form renews vdb_csrf, and so does the JSON sign-in", async () => {
    const { email } = await signedInMember()
    const login = await http(site, "GET", "/login")
    const jar = cookiesOf(login)
    const before = jar["vdb_csrf"]!
    const signedIn = await postForm(site, "/login", {
      csrf: csrfIn(login.text),
      email,
      password: PASSWORD,
      next: "/device"
    }, {
      headers: { cookie: cookieHeader(jar) }
    })
    assert.strictEqual(signedIn.status, 303)
    const renewed = setCookieHeaders(signedIn).find((c) => c.startsWith("vdb_csrf="))
    assert.isDefined(renewed, "no new vdb_csrf at sign-in")
    assert.include(renewed!, "HttpOnly")
    assert.notStrictEqual(cookiesOf(signedIn)["vdb_csrf"], before)
    const json = await postJson(site, "/api/site/v1/session", { email, password: PASSWORD }, {
      headers: { cookie: `vdb_csrf=${before}` }
    })
    assert.notStrictEqual(cookiesOf(json)["vdb_csrf"] ?? before, before)
  })

  it("a planted vdb_csrf and a field to match are refused without Origin; so is another session's token", async () => {
    const victim = await signedInMember()
    const other = await signedInMember()
    const grant = await authorize()
    const planted = "A".repeat(43)
    const withPlanted = { ...victim.jar, vdb_csrf: planted }
    assert.strictEqual((await postPage("/device", { csrf: planted, code: grant.user_code }, withPlanted)).status, 403)
    const decision = { csrf: planted, code: grant.user_code, decision: "approve" }
    assert.strictEqual((await postPage("/device/decision", decision, withPlanted)).status, 403)
    assert.strictEqual((await postPage("/logout", { csrf: planted }, withPlanted)).status, 403)
    const foreign = await pageCsrf(other.jar)
    assert.strictEqual((await postPage("/device/decision", { ...decision, csrf: foreign }, victim.jar)).status, 403)
    assert.strictEqual(await poll(grant.device_code), "authorization_pending")
    // The victim's own page token works, and the session survived the forged sign-out.
    const own = await postPage("/device", { csrf: await pageCsrf(victim.jar), code: grant.user_code }, victim.jar)
    assert.strictEqual(own.status, 200)
    assert.include(own.text, "Approve this sign-in?")
  })
})

describe("the decision", () => {
  it("redirects to a result page: loading it again shows the outcome and decides nothing", async () => {
    const { jar } = await signedInMember()
    const csrf = await pageCsrf(jar)
    for (const decision of ["approve", "deny"] as const) {
      const grant = await authorize()
      const posted = await postPage("/device/decision", { csrf, code: grant.user_code, decision }, jar)
      assert.strictEqual(`${posted.status} ${posted.headers.location}`, `303 /device/decision?code=${grant.user_code}`)
      const heading = decision === "approve" ? "Device approved" : "Request denied"
      for (let load = 0; load < 2; load++) {
        const result = await http(site, "GET", String(posted.headers.location), {
          headers: { cookie: cookieHeader(jar) }
        })
        assert.strictEqual(result.status, 200)
        assert.include(result.text, heading)
      }
      assert.strictEqual(await poll(grant.device_code), decision === "approve" ? "issued" : "access_denied")
      // Someone else's result is not shown; signed out, the page asks for a sign-in first.
      const stranger = await signedInMember()
      const theirs = await http(site, "GET", String(posted.headers.location), {
        headers: { cookie: cookieHeader(stranger.jar) }
      })
      assert.strictEqual(theirs.status, 404)
      assert.notInclude(theirs.text, heading)
      const anonymous = await http(site, "GET", String(posted.headers.location))
      assert.strictEqual(anonymous.status, 303)
      assert.match(String(anonymous.headers.location), /^\/login\?next=/)
    }
  })
})

describe("the approval page", () => {
  it("labels the client's name as reported by the client, not verified", async () => {
    const { jar } = await signedInMember()
    const grant = await authorize({ client_name: "Official vdb CLI, code verified, safe to approve" })
    const page = await postPage("/device", { csrf: await pageCsrf(jar), code: grant.user_code }, jar)
    assert.strictEqual(page.status, 200)
    const client = /<dt>Client<\/dt><dd>([\s\S]*?)<\/dd>/.exec(page.text)![1]!
    assert.include(client, "Official vdb CLI, code verified, safe to approve")
    assert.include(client, "reported by the client, not verified")
  })
})

describe("the wrong-code throttle", () => {
  it("one budget for the JSON approve and the forms; the throttled code page says when to retry", async () => {
    const { jar } = await signedInMember()
    const csrf = await pageCsrf(jar)
    const cookie = cookieHeader(jar)
    const statuses: Array<number> = []
    for (let i = 0; i < 4; i++) {
      statuses.push(
        (await postJson(site, "/api/site/v1/cli/device/approve", { user_code: "BCD-FGH" }, { headers: { cookie } }))
          .status
      )
    }
    for (let i = 0; i < 3; i++) statuses.push((await postPage("/device", { csrf, code: "BCD-FGH" }, jar)).status)
    for (let i = 0; i < 3; i++) {
      statuses.push((await postPage("/device/decision", { csrf, code: "BCD-FGH", decision: "deny" }, jar)).status)
    }
    assert.deepStrictEqual(statuses, [404, 404, 404, 404, 400, 400, 400, 400, 400, 400])
    const grant = await authorize()
    const throttled = await postPage("/device", { csrf, code: grant.user_code }, jar)
    assert.strictEqual(throttled.status, 429)
    assert.include(throttled.text, "Too many wrong codes")
    const wait = Number(throttled.headers["retry-after"])
    assert.isTrue(wait > 800 && wait <= 900, String(throttled.headers["retry-after"]))
    const json = await postJson(site, "/api/site/v1/cli/device/approve", { user_code: grant.user_code }, {
      headers: { cookie }
    })
    assert.strictEqual(`${json.status} ${json.json.error}`, "429 too_many_attempts")
    assert.strictEqual(await poll(grant.device_code), "authorization_pending")
  })
})
