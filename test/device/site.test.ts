import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"
import {
  cookiesOf,
  declaredBody,
  DEVICE_GRANT,
  endlessBody,
  http,
  postForm,
  postJson,
  type Reply,
  setCookieHeaders,
  startLogin
} from "./http.ts"

/**
 * The device grant over the real `bin/vdb serve` (site + api): every row of
 * spec 3's state and error tables, the limiter, CSRF/Origin rules, sessions,
 * throttles, the pages and `bin/vdb auth|member`. The grant lives 6 s and the
 * interval is 2 s here (a second poll within 1.5 s is slow_down), so expiry is observed for real in seconds.
 */
const LIFETIME_SECONDS = 6
let server: RunningServer
let site: number
let env: Record<string, string>
let org: { uuid: string; secret: string; apiKey: string }
const PASSWORD = "correct horse battery"
const member = { email: "alice@example.test", uuid: "" }

const AUTHORIZE = "/api/site/v1/cli/device/authorize"
const TOKEN = "/api/site/v1/cli/device/token"
const APPROVE = "/api/site/v1/cli/device/approve"
const DENY = "/api/site/v1/cli/device/deny"
const SESSION = "/api/site/v1/session"

const createMember = async (email: string) => {
  const made = await runVdb(["member", "create", "--org", org.uuid, "--email", email, "--json"], env, `${PASSWORD}\n`)
  assert.strictEqual(made.code, 0, made.stderr)
  return JSON.parse(made.stdout) as { uuid: string; email: string; org: string }
}

const signIn = async (email: string, from?: string) => {
  const reply = await postJson(site, SESSION, { email, password: PASSWORD }, from === undefined ? {} : { from })
  assert.strictEqual(reply.status, 200, reply.text)
  return `vdb_session=${cookiesOf(reply)["vdb_session"]}`
}

/** Each caller its own loopback address, so the authorize limiter (12/min per address) is not shared. */
let nextAddress = 10
const freshAddress = () => `127.0.0.${nextAddress++}`

const authorize = async (from = freshAddress(), body: unknown = {}) => {
  const reply = await postJson(site, AUTHORIZE, body, { from, headers: { "user-agent": "test-cli/9.8.7" } })
  assert.strictEqual(reply.status, 200, reply.text)
  return reply.json as {
    device_code: string
    user_code: string
    verification_uri: string
    verification_uri_complete: string
    expires_in: number
    interval: number
  }
}

const pollForm = (deviceCode: string) => postForm(site, TOKEN, { grant_type: DEVICE_GRANT, device_code: deviceCode })
const pollJson = (deviceCode: string) => postJson(site, TOKEN, { device_code: deviceCode })
const errorOf = (reply: Reply) => `${reply.status} ${reply.json?.error}`

beforeAll(async () => {
  env = {
    VDB_DATA_DIR: tempDataDir(),
    VDB_DEVICE_POLL_INTERVAL: "2 seconds",
    VDB_DEVICE_CODE_LIFETIME: `${LIFETIME_SECONDS} seconds`
  }
  server = await startServer(env, ["api", "site"])
  env = server.env
  site = server.ports.site
  const created = await runVdb([
    "org",
    "create",
    "--name",
    "device-test",
    "--per-minute",
    "0",
    "--per-week",
    "0",
    "--json"
  ], env)
  assert.strictEqual(created.code, 0, created.stderr)
  org = JSON.parse(created.stdout)
  member.uuid = (await createMember(member.email)).uuid
}, 120_000)

afterAll(async () => {
  await server?.stop()
})

describe("authorize", () => {
  it("answers RFC 8628's members for an empty JSON object; a non-JSON body is a 400", async () => {
    const grant = await authorize()
    assert.isAtLeast(grant.device_code.length, 40)
    assert.match(grant.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{3}-[BCDFGHJKLMNPQRSTVWXZ]{3}$/)
    assert.strictEqual(grant.verification_uri, `http://127.0.0.1:${site}/device`)
    assert.strictEqual(grant.verification_uri_complete, `http://127.0.0.1:${site}/device?code=${grant.user_code}`)
    assert.deepStrictEqual([grant.expires_in, grant.interval], [LIFETIME_SECONDS, 2])
    const notJson = await http(site, "POST", AUTHORIZE, {
      headers: { "content-type": "application/json" },
      body: "nope",
      from: freshAddress()
    })
    assert.strictEqual(errorOf(notJson), "400 invalid_request")
    const wrongType = await http(site, "POST", AUTHORIZE, {
      headers: { "content-type": "text/plain" },
      body: "{}",
      from: freshAddress()
    })
    assert.strictEqual(wrongType.status, 400)
  })

  it("limits each address to 12 calls a minute: the 13th to 15th get 429 with Retry-After", async () => {
    const from = freshAddress()
    const statuses: Array<number> = []
    let retryAfter: string | undefined
    for (let i = 0; i < 15; i++) {
      const reply = await postJson(site, AUTHORIZE, {}, { from })
      statuses.push(reply.status)
      if (reply.status === 429) retryAfter = String(reply.headers["retry-after"])
    }
    assert.deepStrictEqual(statuses, [...Array(12).fill(200), 429, 429, 429])
    assert.isTrue(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, retryAfter)
    assert.strictEqual((await postJson(site, AUTHORIZE, {}, { from: freshAddress() })).status, 200)
  })
})

describe("state table", () => {
  it("pending → authorization_pending, slow_down → approve → credential once → access_denied on replay", async () => {
    const grant = await authorize()
    assert.strictEqual(errorOf(await pollForm(grant.device_code)), "400 authorization_pending")
    assert.strictEqual(errorOf(await pollForm(grant.device_code)), "400 slow_down")
    const cookie = await signIn(member.email)
    const approved = await postJson(site, APPROVE, { user_code: grant.user_code.replace("-", "").toLowerCase() }, {
      headers: { cookie }
    })
    assert.strictEqual(approved.status, 200, approved.text)
    assert.deepStrictEqual(approved.json, { status: "approved", user_code: grant.user_code })
    const redeemed = await pollJson(grant.device_code)
    assert.strictEqual(redeemed.status, 200, redeemed.text)
    assert.strictEqual(redeemed.json.type, "apikey")
    assert.strictEqual(redeemed.json.org_uuid, org.uuid)
    assert.strictEqual(redeemed.json.orgUuid, org.uuid)
    assert.strictEqual(redeemed.json.api_key, org.apiKey)
    assert.strictEqual(redeemed.headers["cache-control"], "no-store")
    // The credential works against the vulnerability API.
    const api = await http(server.ports.api, "GET", "/v1/info/CVE-2021-44228", {
      headers: { authorization: redeemed.json.api_key }
    })
    assert.include([200, 404], api.status)
    assert.strictEqual(errorOf(await pollJson(grant.device_code)), "400 access_denied")
    assert.strictEqual(errorOf(await pollForm(grant.device_code)), "400 access_denied")
    const again = await postJson(site, APPROVE, { user_code: grant.user_code }, { headers: { cookie } })
    assert.strictEqual(errorOf(again), "409 code_already_used")
  })

  it("50 concurrent polls after approval yield exactly one credential", async () => {
    const grant = await authorize()
    const cookie = await signIn(member.email)
    assert.strictEqual(
      (await postJson(site, APPROVE, { user_code: grant.user_code }, { headers: { cookie } })).status,
      200
    )
    const replies = await Promise.all(Array.from({ length: 50 }, () => pollForm(grant.device_code)))
    assert.strictEqual(replies.filter((r) => r.status === 200).length, 1)
    assert.isTrue(replies.every((r) => r.status === 200 || r.json.error === "access_denied"))
  })

  it("deny → access_denied", async () => {
    const grant = await authorize()
    const cookie = await signIn(member.email)
    const denied = await postJson(site, DENY, { user_code: grant.user_code }, { headers: { cookie } })
    assert.deepStrictEqual([denied.status, denied.json.status], [200, "denied"])
    assert.strictEqual(errorOf(await pollForm(grant.device_code)), "400 access_denied")
  })

  it("token errors: unknown device code, wrong grant_type, missing device_code, not JSON/form", async () => {
    assert.strictEqual(errorOf(await pollForm("x".repeat(43))), "400 invalid_grant")
    assert.strictEqual(
      errorOf(await postForm(site, TOKEN, { grant_type: "password", device_code: "x" })),
      "400 unsupported_grant_type"
    )
    assert.strictEqual(errorOf(await postForm(site, TOKEN, { grant_type: DEVICE_GRANT })), "400 invalid_request")
    assert.strictEqual(
      errorOf(await http(site, "POST", TOKEN, { headers: { "content-type": "text/plain" }, body: "x" })),
      "400 invalid_request"
    )
    // RFC 6749: a missing grant_type and a parameter sent twice are malformed requests.
    assert.strictEqual(errorOf(await postForm(site, TOKEN, { device_code: "x".repeat(43) })), "400 invalid_request")
    const form = { "content-type": "application/x-www-form-urlencoded" }
    const twice = await http(site, "POST", TOKEN, {
      headers: form,
      body: `grant_type=${encodeURIComponent(DEVICE_GRANT)}&device_code=a&device_code=b`
    })
    assert.strictEqual(errorOf(twice), "400 invalid_request")
  })

  it("a body past the 16 KiB cap is refused as soon as the cap is passed, not buffered to its end", async () => {
    // The request never ends: only a server that stops reading at the cap can answer it.
    // The token endpoint names the cap (not a grant_type it never read).
    const tooBig = await endlessBody(site, TOKEN, "application/x-www-form-urlencoded", 64 * 1024)
    assert.strictEqual(errorOf(tooBig), "400 invalid_request")
    assert.include(tooBig.json.error_description, "16 KiB")
    assert.strictEqual(
      errorOf(await endlessBody(site, AUTHORIZE, "application/json", 64 * 1024, freshAddress())),
      "400 invalid_request"
    )
    // One declared over the cap is refused before any of it is read.
    assert.strictEqual(
      errorOf(await declaredBody(site, TOKEN, "application/x-www-form-urlencoded", 100 * 1024 * 1024)),
      "400 invalid_request"
    )
  })

  it("expiry: expired_token after expires_in; the CLI stops with a clear message; approval is refused", async () => {
    const xdg = mkdtempSync(join(tmpdir(), "vdb-xdg-"))
    const login = startLogin(["--site", `http://127.0.0.1:${site}`], { XDG_CONFIG_HOME: xdg })
    const grant = await authorize()
    assert.strictEqual(errorOf(await pollForm(grant.device_code)), "400 authorization_pending")
    const code = await login.exited
    assert.notStrictEqual(code, 0)
    assert.include(login.output().stderr, "expired")
    assert.strictEqual(errorOf(await pollForm(grant.device_code)), "400 expired_token")
    const cookie = await signIn(member.email)
    assert.strictEqual(
      errorOf(await postJson(site, APPROVE, { user_code: grant.user_code }, { headers: { cookie } })),
      "410 expired_token"
    )
    assert.throws(() => statSync(join(xdg, "vdb", "credentials.json")))
  }, 60_000)
})

describe("approve and sessions", () => {
  it("approve and deny without a session are 401; unknown codes 404; repeated wrong codes 429", async () => {
    const grant = await authorize()
    assert.strictEqual(errorOf(await postJson(site, APPROVE, { user_code: grant.user_code })), "401 unauthenticated")
    assert.strictEqual(errorOf(await postJson(site, DENY, { user_code: grant.user_code })), "401 unauthenticated")
    assert.strictEqual(
      errorOf(
        await postJson(site, APPROVE, { user_code: grant.user_code }, { headers: { cookie: "vdb_session=forged" } })
      ),
      "401 unauthenticated"
    )
    // Without a session the answer is the 401 whatever the body is: none, or a form.
    for (const path of [APPROVE, DENY]) {
      assert.strictEqual(errorOf(await http(site, "POST", path)), "401 unauthenticated", path)
      const form = await http(site, "POST", path, {
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `user_code=${grant.user_code}`
      })
      assert.strictEqual(errorOf(form), "401 unauthenticated", path)
    }
    const guesser = await createMember("guesser@example.test")
    const cookie = await signIn(guesser.email)
    const statuses: Array<string> = []
    for (let i = 0; i < 11; i++) {
      statuses.push(errorOf(await postJson(site, APPROVE, { user_code: "BCD-FGH" }, { headers: { cookie } })))
    }
    assert.deepStrictEqual(statuses, [...Array(10).fill("404 invalid_user_code"), "429 too_many_attempts"])
  })

  it("JSON endpoints need application/json and a same-origin Origin", async () => {
    const grant = await authorize()
    const cookie = await signIn(member.email)
    const crossSite = await postJson(site, APPROVE, { user_code: grant.user_code }, {
      headers: { cookie, origin: "https://evil.example" }
    })
    assert.strictEqual(errorOf(crossSite), "403 invalid_origin")
    const formBody = await http(site, "POST", APPROVE, {
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: `user_code=${grant.user_code}`
    })
    assert.strictEqual(errorOf(formBody), "400 invalid_request")
    const sameSite = await postJson(site, APPROVE, { user_code: grant.user_code }, {
      headers: { cookie, origin: `http://127.0.0.1:${site}` }
    })
    assert.strictEqual(sameSite.status, 200)
    const crossSignIn = await postJson(site, SESSION, { email: member.email, password: PASSWORD }, {
      headers: { origin: "http://evil.example" }
    })
    assert.strictEqual(crossSignIn.status, 403)
  })

  it("sign-in sets an HttpOnly SameSite=Lax cookie; sign-out ends the session", async () => {
    const reply = await postJson(site, SESSION, { email: member.email.toUpperCase(), password: PASSWORD })
    assert.strictEqual(reply.status, 200)
    const header = setCookieHeaders(reply).find((c) => c.startsWith("vdb_session="))!
    assert.include(header, "HttpOnly")
    assert.include(header, "SameSite=Lax")
    assert.notInclude(header, "Secure") // plain http on loopback
    const cookie = `vdb_session=${cookiesOf(reply)["vdb_session"]}`
    const grant = await authorize()
    const out = await http(site, "DELETE", SESSION, { headers: { cookie } })
    assert.strictEqual(out.status, 204)
    assert.strictEqual(
      errorOf(await postJson(site, APPROVE, { user_code: grant.user_code }, { headers: { cookie } })),
      "401 unauthenticated"
    )
  })

  it("throttles wrong passwords per account: the 6th try is 429 even with the right password", async () => {
    const target = await createMember("target@example.test")
    const from = freshAddress()
    const statuses: Array<number> = []
    for (let i = 0; i < 5; i++) {
      statuses.push(
        (await postJson(site, SESSION, { email: target.email, password: "wrong password" }, { from })).status
      )
    }
    const locked = await postJson(site, SESSION, { email: target.email, password: PASSWORD }, { from: freshAddress() })
    assert.deepStrictEqual(statuses, [401, 401, 401, 401, 401])
    assert.strictEqual(errorOf(locked), "429 too_many_attempts")
    assert.isDefined(locked.headers["retry-after"])
  })

  it("throttles wrong passwords per address across accounts", async () => {
    const from = freshAddress()
    await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) => postJson(site, SESSION, { email: `nobody${i}@example.test`, password: "x" }, { from })
      )
    )
    assert.strictEqual(
      (await postJson(site, SESSION, { email: member.email, password: PASSWORD }, { from })).status,
      429
    )
    assert.strictEqual(
      (await postJson(site, SESSION, { email: member.email, password: PASSWORD }, { from: freshAddress() })).status,
      200
    )
  })
})

describe("pages", () => {
  const pageCookies = (reply: Reply, jar: Record<string, string>) => Object.assign(jar, cookiesOf(reply))
  const header = (jar: Record<string, string>) => Object.entries(jar).map(([k, v]) => `${k}=${v}`).join("; ")
  const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!

  it("sign in, enter the code, see who asks, approve; forms without the CSRF token are refused", async () => {
    const grant = await authorize(freshAddress(), { client_name: "vdb-cli", client_version: "1.2.3" })
    const start = await http(site, "GET", `/device?code=${grant.user_code}`)
    assert.strictEqual(start.status, 303)
    assert.strictEqual(start.headers.location, `/login?next=${encodeURIComponent(`/device?code=${grant.user_code}`)}`)

    const jar: Record<string, string> = {}
    const login = await http(site, "GET", String(start.headers.location))
    pageCookies(login, jar)
    assert.strictEqual(login.status, 200)
    const csrf = csrfIn(login.text)
    const noToken = await postForm(site, "/login", { email: member.email, password: PASSWORD, next: "/device" }, {
      headers: { cookie: header(jar) }
    })
    assert.strictEqual(noToken.status, 403)
    const wrong = await postForm(site, "/login", { csrf, email: member.email, password: "nope", next: "/device" }, {
      headers: { cookie: header(jar) }
    })
    assert.strictEqual(wrong.status, 401)
    const signedIn = await postForm(site, "/login", {
      csrf,
      email: member.email,
      password: PASSWORD,
      next: `/device?code=${grant.user_code}`
    }, { headers: { cookie: header(jar) } })
    assert.strictEqual(signedIn.status, 303)
    assert.strictEqual(signedIn.headers.location, `/device?code=${grant.user_code}`)
    pageCookies(signedIn, jar)

    const entry = await http(site, "GET", `/device?code=${grant.user_code}`, { headers: { cookie: header(jar) } })
    assert.strictEqual(entry.status, 200)
    assert.include(entry.text, `value="${grant.user_code}"`)
    // Signed in, the forms carry the session's token, not the sign-in form's.
    assert.notStrictEqual(csrfIn(entry.text), csrf)
    const sessionCsrf = csrfIn(entry.text)
    const approval = await postForm(site, "/device", { csrf: sessionCsrf, code: grant.user_code.toLowerCase() }, {
      headers: { cookie: header(jar) }
    })
    assert.strictEqual(approval.status, 200)
    for (const shown of ["vdb-cli", "1.2.3", "127.0.0.", grant.user_code, "Approve", "Deny"]) {
      assert.include(approval.text, shown)
    }
    for (const hidden of [org.uuid, org.apiKey, org.secret, org.apiKey.split(":")[1]!]) {
      assert.notInclude(approval.text, hidden)
    }
    assert.include(String(approval.headers["content-security-policy"]), "default-src 'none'")

    const forged = await postForm(site, "/device/decision", {
      csrf: "forged",
      code: grant.user_code,
      decision: "approve"
    }, { headers: { cookie: header(jar) } })
    assert.strictEqual(forged.status, 403)
    const crossOrigin = await postForm(site, "/device/decision", {
      csrf: sessionCsrf,
      code: grant.user_code,
      decision: "approve"
    }, { headers: { cookie: header(jar), origin: "https://evil.example" } })
    assert.strictEqual(crossOrigin.status, 403)
    const done = await postForm(site, "/device/decision", {
      csrf: sessionCsrf,
      code: grant.user_code,
      decision: "approve"
    }, { headers: { cookie: header(jar) } })
    assert.strictEqual(`${done.status} ${done.headers.location}`, `303 /device/decision?code=${grant.user_code}`)
    assert.include(
      (await http(site, "GET", String(done.headers.location), { headers: { cookie: header(jar) } })).text,
      "Device approved"
    )
    assert.strictEqual((await pollForm(grant.device_code)).status, 200)
  })

  it("the decision form counts wrong codes against the same budget as the code form and the JSON approve", async () => {
    const guesser = await createMember("form-guesser@example.test")
    const cookie = await signIn(guesser.email)
    const jar = { vdb_session: cookie.split("=")[1]! }
    const entry = await http(site, "GET", "/device", { headers: { cookie: header(jar) } })
    pageCookies(entry, jar)
    const csrf = csrfIn(entry.text)
    const statuses: Array<number> = []
    for (let i = 0; i < 11; i++) {
      const decision = i % 2 === 0 ? "approve" : "deny"
      statuses.push(
        (await postForm(site, "/device/decision", { csrf, code: "BCD-FGH", decision }, {
          headers: { cookie: header(jar) }
        })).status
      )
    }
    assert.deepStrictEqual(statuses, [...Array(10).fill(400), 429])
    // Throttled there, the member cannot decide a live code through any path, the form included.
    const grant = await authorize()
    const live = await postForm(site, "/device/decision", { csrf, code: grant.user_code, decision: "approve" }, {
      headers: { cookie: header(jar) }
    })
    assert.strictEqual(live.status, 429)
    assert.include(live.text, "Too many wrong codes")
    assert.strictEqual(
      errorOf(await postJson(site, APPROVE, { user_code: grant.user_code }, { headers: { cookie } })),
      "429 too_many_attempts"
    )
    assert.strictEqual(errorOf(await pollJson(grant.device_code)), "400 authorization_pending")
  })

  it("after sign-in only a same-site path is followed: tabs, newlines and other characters a browser drops or a header refuses fall back to /device", async () => {
    const cookie = await signIn(member.email)
    for (
      const next of [
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\n/x",
        "/ /evil.example",
        "/\u2014",
        "//evil.example",
        "/\\evil.example",
        "https://evil.example/"
      ]
    ) {
      const reply = await http(site, "GET", `/login?next=${encodeURIComponent(next)}`, { headers: { cookie } })
      assert.strictEqual(`${reply.status} ${reply.headers.location}`, "303 /device", JSON.stringify(next))
    }
    const kept = await http(site, "GET", `/login?next=${encodeURIComponent("/device?code=BCD-FGH")}`, {
      headers: { cookie }
    })
    assert.strictEqual(`${kept.status} ${kept.headers.location}`, "303 /device?code=BCD-FGH")
    // Signed out, the same value ends up in the form's hidden field as the fallback.
    const page = await http(site, "GET", `/login?next=${encodeURIComponent("/\t/evil.example")}`)
    assert.include(page.text, "name=\"next\" value=\"/device\"")
  })

  it("an unknown code is shown as an error on the code page", async () => {
    const cookie = await signIn(member.email)
    const jar = { vdb_session: cookie.split("=")[1]! }
    const entry = await http(site, "GET", "/device", { headers: { cookie: header(jar) } })
    pageCookies(entry, jar)
    const reply = await postForm(site, "/device", { csrf: csrfIn(entry.text), code: "ZZZ-ZZZ" }, {
      headers: { cookie: header(jar) }
    })
    assert.strictEqual(reply.status, 400)
    assert.include(reply.text, "no sign-in request has this code")
  })
})

describe("other routes", () => {
  it("the retired poll path is 404; the OpenAPI document lists the grant", async () => {
    assert.strictEqual((await http(site, "GET", "/api/cli/auth-code/poll/BCD-FGH")).status, 404)
    const openapi = await http(site, "GET", "/api/site/v1/openapi.json")
    assert.strictEqual(openapi.status, 200)
    for (const path of [AUTHORIZE, APPROVE, DENY, TOKEN, SESSION]) assert.property(openapi.json.paths, path)
  })

  it("requests no route takes: JSON {error, error_description} under /api/, a page elsewhere; 404, 405 with Allow, 414", async () => {
    const wrongMethod = await http(site, "GET", AUTHORIZE)
    assert.strictEqual(wrongMethod.status, 405)
    assert.strictEqual(wrongMethod.headers.allow, "POST")
    assert.deepStrictEqual(wrongMethod.json, {
      error: "method_not_allowed",
      error_description: "method GET not allowed: use POST"
    })
    const unknown = await http(site, "GET", "/api/site/v1/nope")
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual(unknown.json.error, "not_found")
    const longApi = await http(site, "POST", `/api/site/v1/${"a".repeat(3000)}`)
    assert.strictEqual(longApi.status, 414)
    assert.strictEqual(longApi.json.error, "uri_too_long")
    const page = await http(site, "GET", "/nope?<script>")
    assert.strictEqual(page.status, 404)
    assert.match(String(page.headers["content-type"]), /^text\/html/)
    assert.include(page.text, "<h1>Page not found</h1>")
    assert.notInclude(page.text, "<script>")
    assert.strictEqual(page.headers["content-security-policy"]?.toString().includes("default-src 'none'"), true)
  })
})

describe("CLI", () => {
  it("auth login → approve → credentials file (0600, no device_code) → auth status / verify / logout", async () => {
    const xdg = mkdtempSync(join(tmpdir(), "vdb-xdg-"))
    const cliEnv = { XDG_CONFIG_HOME: xdg, VDB_API_URL: `http://127.0.0.1:${server.ports.api}/v1` }
    const login = startLogin(["--site", `http://127.0.0.1:${site}`], cliEnv)
    const userCode = await login.userCode()
    assert.include(login.output().stdout, `http://127.0.0.1:${site}/device?code=${userCode}`)
    const cookie = await signIn(member.email)
    assert.strictEqual((await postJson(site, APPROVE, { user_code: userCode }, { headers: { cookie } })).status, 200)
    assert.strictEqual(await login.exited, 0, login.output().stderr)
    const path = join(xdg, "vdb", "credentials.json")
    assert.strictEqual(statSync(path).mode & 0o777, 0o600)
    const stored = JSON.parse(readFileSync(path, "utf8"))
    assert.deepStrictEqual(Object.keys(stored).sort(), ["api", "apiKey", "orgUuid", "site", "type"])
    assert.deepStrictEqual([stored.type, stored.orgUuid, stored.apiKey], ["apikey", org.uuid, org.apiKey])
    assert.notMatch(readFileSync(path, "utf8"), /device_code/)

    const status = await runVdb(["auth", "status"], cliEnv)
    assert.strictEqual(status.code, 0)
    assert.include(status.stdout, org.uuid)
    assert.notInclude(status.stdout, org.apiKey)
    const verify = await runVdb(["auth", "verify"], cliEnv)
    assert.strictEqual(verify.code, 0, verify.stderr)
    // The API commands use the stored key: an identifier with no data is "not found", not "no credentials" or 401.
    const info = await runVdb(["info", "CVE-1999-0001"], cliEnv)
    assert.include(info.stderr, "is not known")
    assert.notInclude(info.stderr, "credentials")
    const jwt = await runVdb(["info", "CVE-1999-0001", "--jwt"], cliEnv)
    assert.strictEqual(jwt.code, 1)
    assert.include(jwt.stderr, "leave out --jwt")
    const logout = await runVdb(["auth", "logout"], cliEnv)
    assert.strictEqual(logout.code, 0)
    const after = await runVdb(["auth", "verify"], cliEnv)
    assert.strictEqual(after.code, 1)
    assert.include(after.stderr, "not signed in")
  }, 60_000)

  it(
    "without VDB_SITE_URL or VDB_API_URL the CLI finds the server by its ports, and info uses the API a sign-in stored",
    async () => {
      const xdg = mkdtempSync(join(tmpdir(), "vdb-xdg-"))
      // The ports `bin/vdb serve` was started with in this shell, no URL: before, login went to 8082 and info to 8080.
      const cliEnv = { XDG_CONFIG_HOME: xdg, VDB_SITE_PORT: String(site), VDB_API_PORT: String(server.ports.api) }
      const login = startLogin([], cliEnv)
      const userCode = await login.userCode()
      assert.include(login.output().stdout, `http://127.0.0.1:${site}/device?code=${userCode}`)
      const cookie = await signIn(member.email)
      assert.strictEqual((await postJson(site, APPROVE, { user_code: userCode }, { headers: { cookie } })).status, 200)
      assert.strictEqual(await login.exited, 0, login.output().stderr)
      assert.strictEqual(
        JSON.parse(readFileSync(join(xdg, "vdb", "credentials.json"), "utf8")).api,
        `http://127.0.0.1:${server.ports.api}/v1`
      )
      // Another VDB_API_PORT now (a server elsewhere in this shell): the stored API is the one the credential is for.
      const info = await runVdb(["info", "CVE-1999-0001"], { XDG_CONFIG_HOME: xdg, VDB_API_PORT: "1" })
      assert.include(info.stderr, "is not known")
    },
    60_000
  )

  it("auth verify fails with a clear message when the key was rotated", async () => {
    const xdg = mkdtempSync(join(tmpdir(), "vdb-xdg-"))
    const other = JSON.parse((await runVdb(["org", "create", "--name", "rotated", "--json"], env)).stdout)
    const { mkdirSync, writeFileSync } = await import("node:fs")
    mkdirSync(join(xdg, "vdb"))
    writeFileSync(
      join(xdg, "vdb", "credentials.json"),
      JSON.stringify({
        type: "apikey",
        orgUuid: other.uuid,
        apiKey: other.apiKey,
        site: "",
        api: `http://127.0.0.1:${server.ports.api}/v1`
      }),
      { mode: 0o600 }
    )
    assert.strictEqual((await runVdb(["org", "rotate-secret", other.uuid], env)).code, 0)
    const verify = await runVdb(["auth", "verify"], { ...env, XDG_CONFIG_HOME: xdg })
    assert.strictEqual(verify.code, 1)
    assert.include(verify.stderr, "refused the stored credential")
  })

  it("a hand-written organization secret is named by auth status and kept by auth logout", async () => {
    const xdg = mkdtempSync(join(tmpdir(), "vdb-xdg-"))
    const { mkdirSync, writeFileSync, existsSync } = await import("node:fs")
    mkdirSync(join(xdg, "vdb"))
    const path = join(xdg, "vdb", "credentials.json")
    writeFileSync(path, JSON.stringify({ orgUuid: org.uuid, secret: org.secret }), { mode: 0o600 })
    const cliEnv = { XDG_CONFIG_HOME: xdg }
    const status = await runVdb(["auth", "status", "--json"], cliEnv)
    assert.strictEqual(status.code, 1)
    assert.deepStrictEqual(JSON.parse(status.stdout), {
      signedIn: false,
      orgUuid: org.uuid,
      credential: "organization secret",
      file: path
    })
    assert.include(status.stderr, `holds organization ${org.uuid}'s secret, written by hand`)
    assert.notInclude(status.stdout + status.stderr, org.secret)
    const logout = await runVdb(["auth", "logout"], cliEnv)
    assert.strictEqual(logout.code, 1)
    assert.include(logout.stderr, "it was left in place")
    assert.isTrue(existsSync(path))
    const nothing = await runVdb(["auth", "status", "--json"], {
      XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "vdb-xdg-"))
    })
    assert.strictEqual(nothing.code, 1)
    assert.strictEqual(JSON.parse(nothing.stdout).signedIn, false)
  })

  it(
    "auth login shows and stores nothing a hostile site sends: escape sequences and a malformed credential are refused",
    async () => {
      const { createServer } = await import("node:http")
      let answer: "code" | "credential" = "code"
      const fake = createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          res.setHeader("content-type", "application/json")
          if (req.url!.endsWith("/authorize")) {
            const code = answer === "code" ? "\u001b[2J\u001b]0;PWNED\u0007FAKE-CODE" : "BCD-FGH"
            res.end(
              JSON.stringify({
                device_code: "d",
                user_code: code,
                verification_uri: "http://127.0.0.1/device",
                expires_in: 60,
                interval: 1
              })
            )
          } else {
            res.end(JSON.stringify({ type: "apikey", orgUuid: "\u001b[32morg\u001b[0m", api_key: "ApiKey x:y" }))
          }
        })
      })
      await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve))
      try {
        const port = (fake.address() as { port: number }).port
        const xdg = mkdtempSync(join(tmpdir(), "vdb-xdg-"))
        const escaped = await runVdb(["auth", "login", "--site", `http://127.0.0.1:${port}`], { XDG_CONFIG_HOME: xdg })
        assert.strictEqual(escaped.code, 1)
        assert.include(escaped.stderr, "malformed user code")
        assert.notInclude(escaped.stdout + escaped.stderr, "\u001b")
        answer = "credential"
        const malformed = await runVdb(["auth", "login", "--site", `http://127.0.0.1:${port}`], {
          XDG_CONFIG_HOME: xdg
        })
        assert.strictEqual(malformed.code, 1)
        assert.include(malformed.stderr, "malformed credential; nothing was stored")
        assert.include(malformed.stdout, "expires in 60 seconds")
        assert.notInclude(malformed.stdout + malformed.stderr, "\u001b")
        const { existsSync } = await import("node:fs")
        assert.isFalse(existsSync(join(xdg, "vdb", "credentials.json")))
      } finally {
        fake.close()
      }
    },
    30_000
  )

  it("member list and remove; a removed member cannot sign in", async () => {
    const leaving = await createMember("leaving@example.test")
    const listed = await runVdb(["member", "list", "--org", org.uuid, "--json"], env)
    assert.isTrue(JSON.parse(listed.stdout).some((m: { email: string }) => m.email === leaving.email))
    const cookie = await signIn(leaving.email)
    assert.strictEqual((await runVdb(["member", "remove", leaving.uuid], env)).code, 0)
    assert.strictEqual((await postJson(site, SESSION, { email: leaving.email, password: PASSWORD })).status, 401)
    const grant = await authorize()
    assert.strictEqual(
      (await postJson(site, APPROVE, { user_code: grant.user_code }, { headers: { cookie } })).status,
      401
    )
    const unknownOrg = await runVdb(
      ["member", "create", "--org", "00000000-0000-4000-8000-000000000000", "--email", "x@y.test"],
      env,
      "password123\n"
    )
    assert.strictEqual(unknownOrg.code, 1)
    assert.include(unknownOrg.stderr, "does not exist")
  })
})
