import { existsSync, mkdirSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Browser, chromium } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { ROOT, type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"
import { startLogin } from "./http.ts"

/**
 * The whole device sign-in as a person does it: `bin/vdb auth login` in a
 * terminal, real Chromium signing in as a member, entering the code and
 * approving; then `bin/vdb auth verify` exits 0.
 */
const CHROMIUM = "/usr/bin/chromium"
const available = existsSync(CHROMIUM)
if (!available) console.warn(`browser.test.ts skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`)

const PASSWORD = "correct horse battery"
const EMAIL = "browser@example.test"

describe.skipIf(!available)("device sign-in in Chromium", () => {
  let server: RunningServer
  let browser: Browser
  let org: { uuid: string; secret: string; apiKey: string }

  beforeAll(async () => {
    const launching = chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run"
      ]
    })
    server = await startServer({ VDB_DATA_DIR: tempDataDir(), VDB_DEVICE_POLL_INTERVAL: "1 second" }, ["api", "site"])
    const created = await runVdb([
      "org",
      "create",
      "--name",
      "browser",
      "--per-minute",
      "0",
      "--per-week",
      "0",
      "--json"
    ], server.env)
    assert.strictEqual(created.code, 0, created.stderr)
    org = JSON.parse(created.stdout)
    const member = await runVdb(["member", "create", "--org", org.uuid, "--email", EMAIL], server.env, `${PASSWORD}\n`)
    assert.strictEqual(member.code, 0, member.stderr)
    browser = await launching
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  it("auth login, sign in, enter the code, approve; auth verify exits 0", async () => {
    const xdg = mkdtempSync(join(tmpdir(), "vdb-xdg-"))
    const cliEnv = { XDG_CONFIG_HOME: xdg, VDB_API_URL: `http://127.0.0.1:${server.ports.api}/v1` }
    const login = startLogin(["--site", `http://127.0.0.1:${server.ports.site}`], cliEnv)
    const userCode = await login.userCode()
    const url = /Open (\S+) in your browser/.exec(login.output().stdout)![1]!

    const page = await browser.newPage()
    await page.goto(url)
    assert.match(page.url(), /\/login\?next=/)
    await page.getByLabel("Email").fill(EMAIL)
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.waitForURL(/\/device\?code=/)
    // The code page arrives pre-filled from verification_uri_complete.
    assert.strictEqual(await page.getByLabel("Enter the code shown in your terminal").inputValue(), userCode)
    await page.getByRole("button", { name: "Continue" }).click()
    await page.getByRole("heading", { name: "Approve this sign-in?" }).waitFor()

    const html = await page.content()
    assert.include(html, userCode)
    assert.include(html, "vdb-cli")
    // The name is the client's own claim, and the page says so.
    assert.include(await page.locator("dd").filter({ hasText: "vdb-cli" }).innerText(), "not verified")
    for (const secret of [org.uuid, org.apiKey, org.apiKey.split(":")[1]!, org.secret]) assert.notInclude(html, secret)
    const artifacts = join(ROOT, "test", "artifacts")
    mkdirSync(artifacts, { recursive: true })
    await page.screenshot({ path: join(artifacts, "device-approval.png"), fullPage: true })

    await page.getByRole("button", { name: "Approve" }).click()
    await page.getByRole("heading", { name: "Device approved" }).waitFor()
    assert.notInclude(await page.content(), org.uuid)
    // The answer to the post was a redirect: reloading the result shows it again and posts nothing.
    assert.strictEqual(new URL(page.url()).pathname + new URL(page.url()).search, `/device/decision?code=${userCode}`)
    const reloaded = await page.reload()
    assert.strictEqual(reloaded?.request().method(), "GET")
    await page.getByRole("heading", { name: "Device approved" }).waitFor()

    assert.strictEqual(await login.exited, 0, login.output().stderr)
    const verify = await runVdb(["auth", "verify"], cliEnv)
    assert.strictEqual(verify.code, 0, verify.stderr)
  }, 90_000)
})
