import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { Members } from "../../src/members/Members.ts"
import { Sessions } from "../../src/members/Sessions.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { siteApp, siteDomains } from "./siteDomains.ts"

/**
 * A defect on the site (src/site/SiteRoutes.ts, SiteFailures): sessions that fail as a broken
 * database would, swapped in as a layer. The client gets the site's dialect and none of the cause;
 * the log gets the cause.
 */
const ORIGIN = "http://vdb.example"
const CAUSE = "connection to member_sessions lost: secret-detail-1234"

const BrokenSessions = Layer.effect(
  Sessions,
  Effect.gen(function*() {
    const sessions = yield* Sessions
    return Sessions.of({
      ...sessions,
      open: () => Effect.die(new Error(CAUSE)),
      resolve: () => Effect.die(new Error(CAUSE))
    })
  })
).pipe(Layer.provide(Sessions.layerMemory))

const logged: Array<string> = []
const App = siteApp(ORIGIN, siteDomains(BrokenSessions)).pipe(
  Layer.provide(Logger.layer([Logger.map(Logger.formatJson, (line) => void logged.push(line))]))
)

describe("a defect on the site", () => {
  layer(App, { excludeTestServices: true })((it) => {
    it.effect("is 500 server_error under /api/ and a page elsewhere, with the cause in the log only", () =>
      Effect.gen(function*() {
        const org = yield* (yield* Organizations).create({ name: "broken" })
        yield* (yield* Members).create({ orgUuid: org.uuid, email: "b@example.test", password: "correct horse" })
        const client = yield* HttpClient.HttpClient

        const signIn = yield* client.execute(
          HttpClientRequest.post("/api/site/v1/session").pipe(
            HttpClientRequest.setHeaders({ origin: ORIGIN }),
            HttpClientRequest.bodyJsonUnsafe({ email: "b@example.test", password: "correct horse" })
          )
        )
        assert.strictEqual(signIn.status, 500)
        const body = yield* signIn.text
        assert.deepStrictEqual(JSON.parse(body), {
          error: "server_error",
          error_description: "the server failed to answer; try again"
        })

        const page = yield* client.execute(
          HttpClientRequest.get("/device").pipe(
            HttpClientRequest.setHeaders({ cookie: "vdb_session=abc" })
          )
        )
        assert.strictEqual(page.status, 500)
        assert.match(page.headers["content-type"] ?? "", /text\/html/)
        const html = yield* page.text
        assert.include(html, "Something went wrong")

        for (const text of [body, html, JSON.stringify(signIn.headers), JSON.stringify(page.headers)]) {
          assert.notInclude(text, "secret-detail")
        }
        assert.isAtLeast(
          logged.filter((line) => line.includes("site request failed") && line.includes("secret-detail")).length,
          2
        )
      }))
  })
})
