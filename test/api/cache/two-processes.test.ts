import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { signTokenRequest } from "../../../src/auth/SigV4Token.ts"
import { throwawayDatabase } from "../../support/database.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../../support/processes.ts"

/**
 * Two `bin/vdb serve api` processes on one PostgreSQL. Every write goes
 * through process A (the CLI on A's admin socket); B has already cached what
 * the write changes, and its very next request must not see the old answer.
 * Nothing here waits: the ingest's (or the admin command's) acknowledgement
 * comes after the invalidation was published.
 */
describe("caches of another process (PostgreSQL): never stale after a write on A", () => {
  const scope = Effect.runSync(Scope.make())
  let a: RunningServer
  let b: RunningServer
  let envA: Record<string, string>

  beforeAll(async () => {
    const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    const shared = {
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_LOG_LEVEL: "Warn"
    }
    envA = { ...shared, VDB_DATA_DIR: tempDataDir() }
    a = await startServer(envA, ["api"])
    b = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["api"])
  }, 120_000)

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  const onA = async (args: ReadonlyArray<string>, input?: string) => {
    const run = await runVdb(args, envA, input)
    expect(run.code, run.stderr).toBe(0)
    return run.stdout
  }

  const onB = async (path: string, apiKey: string) => {
    const response = await fetch(`http://127.0.0.1:${b.ports.api}/v1${path}`, { headers: { authorization: apiKey } })
    const text = await response.text()
    return {
      status: response.status,
      etag: response.headers.get("etag"),
      body: text === "" ? undefined : JSON.parse(text)
    }
  }

  const fromA = (path: string, apiKey: string) =>
    fetch(`http://127.0.0.1:${a.ports.api}/v1${path}`, { headers: { authorization: apiKey } }).then((r) => r.json())

  const osv = (id: string, aliases: ReadonlyArray<string>, summary = "first") =>
    JSON.stringify({ id, modified: "2024-01-01T00:00:00Z", aliases, summary }) + "\n"

  const newOrg = async (name: string) =>
    JSON.parse(await onA(["org", "create", "--name", name, "--per-minute", "0", "--per-week", "0", "--json"])) as {
      uuid: string
      secret: string
      apiKey: string
    }

  it("an ingest on A of an alias of a CVE: B's next /vuln and /info of the CVE include it", async () => {
    const org = await newOrg("ingest")
    await onA(["ingest", "osv", "-", "--json"], osv("GO-2032-0001", ["CVE-2032-0001"]))
    const first = await onB("/vuln/CVE-2032-0001", org.apiKey)
    expect(first.status).toBe(200)
    expect(first.body.length).toBe(1)
    expect((await onB("/vuln/CVE-2032-0001", org.apiKey)).etag).toBe(first.etag)
    expect((await onB("/info/CVE-2032-0001", org.apiKey)).body.cache_hit).toBe(false)
    expect((await onB("/info/CVE-2032-0001", org.apiKey)).body.cache_hit).toBe(true)

    // Only the alias is ingested; it names the CVE.
    await onA(["ingest", "osv", "-", "--json"], osv("PYSEC-2032-1", ["CVE-2032-0001"]))
    const after = await onB("/vuln/CVE-2032-0001", org.apiKey)
    // OSV merges what it knows of the CVE into one record: now it names the new alias too.
    expect(JSON.stringify(after.body)).toContain("PYSEC-2032-1")
    expect(after.etag).not.toBe(first.etag)
    // What A (which never cached it) answers is what B answers.
    expect(after.body).toEqual(await fromA("/vuln/CVE-2032-0001", org.apiKey))
    const info = await onB("/info/CVE-2032-0001", org.apiKey)
    expect(info.body.cache_hit).toBe(false)
    expect(info.body.aliases).toEqual(["GO-2032-0001", "PYSEC-2032-1"])

    // A changed record (same identifier): B's next answer is the new one.
    await onA(["ingest", "osv", "-", "--json"], osv("GO-2032-0001", ["CVE-2032-0001"], "second"))
    const changed = await onB("/vuln/GO-2032-0001", org.apiKey)
    expect(JSON.stringify(changed.body)).toContain("second")
  }, 60_000)

  it("a deactivation on A refuses B's very next request; a reactivation admits the next", async () => {
    const org = await newOrg("deactivated")
    // B has the organization cached (and its key verified) before the change.
    expect((await onB("/info/CVE-2032-0404", org.apiKey)).status).toBe(404)
    expect((await onB("/info/CVE-2032-0404", org.apiKey)).status).toBe(404)
    await onA(["org", "deactivate", org.uuid])
    expect((await onB("/info/CVE-2032-0404", org.apiKey)).status).toBe(403)
    await onA(["org", "activate", org.uuid])
    expect((await onB("/info/CVE-2032-0404", org.apiKey)).status).toBe(404)
  }, 60_000)

  it(
    "a rotation on A: B refuses the old key and its tokens at once and takes the new one; limits apply at once",
    async () => {
      const org = await newOrg("rotated")
      const signed = signTokenRequest({
        orgUuid: org.uuid,
        secret: org.secret,
        path: "/v1/auth/token",
        now: Date.now()
      })
      const signIn = await fetch(`http://127.0.0.1:${b.ports.api}/v1/auth/token`, {
        headers: { authorization: signed.authorization, "x-amz-date": signed.amzDate }
      })
      expect(signIn.status).toBe(200)
      const bearer = `Bearer ${((await signIn.json()) as { token: string }).token}`
      // B has verified (and remembered) the token and cached the organization before the change.
      expect((await onB("/info/CVE-2032-0404", org.apiKey)).status).toBe(404)
      expect((await onB("/info/CVE-2032-0404", bearer)).status).toBe(404)
      const rotated = JSON.parse(await onA(["org", "rotate-secret", org.uuid, "--json"]))
      expect((await onB("/info/CVE-2032-0404", org.apiKey)).status).toBe(401)
      expect((await onB("/info/CVE-2032-0404", bearer)).body).toEqual({ success: false, error: "invalid token" })
      expect((await onB("/info/CVE-2032-0404", rotated.apiKey)).status).toBe(404)
      await onA(["org", "limits", org.uuid, "--per-week", "7"])
      const limited = await fetch(`http://127.0.0.1:${b.ports.api}/v1/info/CVE-2032-0404`, {
        headers: { authorization: rotated.apiKey }
      })
      expect(limited.headers.get("x-ratelimit-limit-week")).toBe("7")
    },
    60_000
  )
})
