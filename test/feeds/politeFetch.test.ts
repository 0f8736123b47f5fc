import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { politeFetch } from "../../src/feeds/PoliteFetch.ts"
import { feedMirror } from "../support/feedMirror.ts"

const KEV = "/cisa-kev/known_exploited_vulnerabilities.json"
const NUCLEI = "/nuclei/cves.json"
const EXPLOITS = "/exploit-db/files_exploits.csv"

const fetchFrom = (url: string) =>
  Effect.scoped(Effect.gen(function*() {
    const fetched = yield* politeFetch({
      url,
      contentTypes: ["application/json", "text/plain"],
      secretHeaders: { apikey: Redacted.make("nvd-key"), authorization: Redacted.make("Bearer gh-token") },
      deadline: Date.now() + 30_000,
      attempts: 1
    })
    return fetched.url
  }))

describe("secret headers across redirects", () => {
  it.effect("kept on a redirect within the origin, dropped when it leaves for another (another port is another origin)", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const first = yield* feedMirror
        const second = yield* feedMirror
        const seen = (mirror: typeof first, path: string) =>
          mirror.requests.filter((r) => r.path === path).map((r) => [r.status, r.apiKey, r.authorization])

        first.fault(NUCLEI, { kind: "redirect", location: EXPLOITS })
        assert.strictEqual(yield* fetchFrom(first.url(NUCLEI)), first.url(EXPLOITS))
        assert.deepStrictEqual(seen(first, NUCLEI), [[302, true, true]])
        assert.deepStrictEqual(seen(first, EXPLOITS), [[200, true, true]], "same origin: the secrets follow")

        first.fault(KEV, { kind: "redirect", location: second.url(KEV) })
        assert.strictEqual(yield* fetchFrom(first.url(KEV)), second.url(KEV))
        assert.deepStrictEqual(seen(first, KEV), [[302, true, true]], "the first origin gets the secrets")
        assert.deepStrictEqual(seen(second, KEV), [[200, false, false]], "the second origin gets none")
      }).pipe(Effect.provide(NodeHttpClient.layerUndici))
    ))
})
