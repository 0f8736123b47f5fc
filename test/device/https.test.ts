import { assert, describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Cookies, HttpClient, HttpClientRequest } from "effect/http"
import { Members } from "../../src/members/Members.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { siteApp } from "./siteDomains.ts"

/**
 * The site behind an https origin (`VDB_SITE_URL`), in-process on the memory
 * layers: cookies are `Secure`, the verification URI is the public one, and
 * only that origin passes the same-origin check.
 */
const ORIGIN = "https://vdb.example"

const App = siteApp(ORIGIN)

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.flatMap(HttpClient.HttpClient, (client) =>
    client.execute(
      HttpClientRequest.post(path).pipe(
        HttpClientRequest.setHeaders(headers),
        HttpClientRequest.bodyJsonUnsafe(body)
      )
    ))

describe("site behind https", () => {
  layer(App, { excludeTestServices: true })((it) => {
    it.effect("Secure cookies, the public verification URI and only the public origin", () =>
      Effect.gen(function*() {
        const org = yield* (yield* Organizations).create({ name: "https" })
        yield* (yield* Members).create({ orgUuid: org.uuid, email: "h@example.test", password: "correct horse" })

        const grant = yield* post("/api/site/v1/cli/device/authorize", {})
        const body = (yield* grant.json) as { verification_uri: string; user_code: string }
        assert.strictEqual(body.verification_uri, `${ORIGIN}/device`)

        const signedIn = yield* post("/api/site/v1/session", { email: "h@example.test", password: "correct horse" }, {
          origin: ORIGIN
        })
        assert.strictEqual(signedIn.status, 200)
        // Both cookies a sign-in sets (the session, and the renewed sign-in form token) are Secure.
        for (const name of ["vdb_session", "vdb_csrf"]) {
          const set = Option.getOrThrow(Cookies.get(signedIn.cookies, name))
          assert.isTrue(set.options?.secure === true && set.options.httpOnly === true, name)
        }
        const session = `vdb_session=${Option.getOrThrow(Cookies.getValue(signedIn.cookies, "vdb_session"))}`

        const local = yield* post("/api/site/v1/cli/device/approve", { user_code: body.user_code }, {
          cookie: session,
          origin: "http://127.0.0.1"
        })
        assert.strictEqual(local.status, 403)
        const approved = yield* post("/api/site/v1/cli/device/approve", { user_code: body.user_code }, {
          cookie: session,
          origin: ORIGIN
        })
        assert.strictEqual(approved.status, 200)
      }))
  })
})
