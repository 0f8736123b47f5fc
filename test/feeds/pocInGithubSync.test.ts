import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { syncSources } from "../../src/feeds/FeedSync.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { apiFeedsApp, FAST, onMirror } from "./apiFeeds.ts"

const page = { limit: 100, offset: 0, includeContent: false }

describe.each(SqlBackends)(
  "poc-in-github: the head commit, then that commit's archive, on the mirror ($name)",
  ({ layer: database }) => {
    layer(apiFeedsApp(database), { excludeTestServices: true })((it) => {
      it.effect(
        "first load from the zip; same head: one request; a new commit: its archive, a bad file failing alone; a cut archive moves nothing",
        () =>
          onMirror((mirror) =>
            Effect.gen(function*() {
              const store = yield* VulnStore
              const cursors = yield* FeedCursors
              const poc = mirror.api.poc
              const [first] = yield* syncSources(["poc-in-github"], FAST)
              assert.deepStrictEqual(
                [first!.status, first!.changed, first!.failed],
                ["updated", 4, 0],
                JSON.stringify(first)
              )
              assert.deepStrictEqual(mirror.api.log.map((r) => [r.path, r.status]), [
                ["/poc-in-github/commits/master", 200],
                [`/poc-in-github/zipball/${poc.sha}`, 302],
                [`/poc-in-github/codeload/${poc.sha}`, 200]
              ])
              assert.strictEqual(mirror.api.log[0]!.accept, "application/vnd.github.sha")
              const state = (yield* cursors.get("poc-in-github"))!
              assert.strictEqual(state.cursor.lastDelta, poc.sha)
              assert.strictEqual(state.lastUrl, mirror.url(`/poc-in-github/zipball/${poc.sha}`))
              const requests = yield* store.exploits("CVE-2023-32681", page)
              assert.ok(requests.count >= 1, "the PoC of CVE-2023-32681 is listed")

              // Same head commit: nothing downloaded.
              mirror.api.log.length = 0
              const [second] = yield* syncSources(["poc-in-github"], FAST)
              assert.deepStrictEqual([second!.status, mirror.api.log.length], ["unchanged", 1])

              // The crawler commits: one list grows by a repository, one file is not JSON.
              const list = JSON.parse(poc.files.get("2022/CVE-2022-0001.json")!.toString()) as Array<
                Record<string, unknown>
              >
              const other = JSON.parse(poc.files.get("2022/CVE-2022-0002.json")!.toString()) as Array<
                Record<string, unknown>
              >
              poc.files.set("2022/CVE-2022-0001.json", Buffer.from(JSON.stringify([...list, ...other])))
              poc.files.set("2022/CVE-2022-9999.json", Buffer.from("[{\"id\": 1, \"full_name\": "))
              // The publisher's README lists every CVE: past the per-record caps, but not a record, so never inflated nor judged.
              poc.files.set("README.md", Buffer.alloc(17 * 1024 * 1024, "# PoC\n"))
              poc.commit()
              const [third] = yield* syncSources(["poc-in-github"], FAST)
              assert.deepStrictEqual(
                [third!.status, third!.changed, third!.failed],
                ["updated", 1, 1],
                JSON.stringify(third)
              )
              assert.strictEqual((yield* store.exploits("CVE-2022-0001", page)).count, 2)
              assert.strictEqual((yield* cursors.get("poc-in-github"))!.cursor.lastDelta, poc.sha)

              // A transfer cut half-way: the run fails and the commit is not marked applied.
              const applied = poc.sha
              poc.files.delete("2022/CVE-2022-9999.json")
              poc.commit()
              poc.cutArchive = true
              const [cut] = yield* syncSources(["poc-in-github"], FAST)
              assert.deepStrictEqual([cut!.status, cut!.error?.kind], ["failed", "Truncated"], JSON.stringify(cut))
              assert.strictEqual((yield* cursors.get("poc-in-github"))!.cursor.lastDelta, applied)
              const [healed] = yield* syncSources(["poc-in-github"], FAST)
              assert.notStrictEqual(healed!.status, "failed", JSON.stringify(healed))
              assert.strictEqual((yield* cursors.get("poc-in-github"))!.cursor.lastDelta, poc.sha)

              // A per-CVE file that inflates 1,000 times past 1 MiB: refused before it is inflated, nothing applied.
              const healedSha = poc.sha
              poc.files.set("2022/CVE-2022-0003.json", Buffer.alloc(17 * 1024 * 1024))
              poc.commit()
              const [bombed] = yield* syncSources(["poc-in-github"], FAST)
              assert.deepStrictEqual(
                [bombed!.status, bombed!.error?.kind],
                ["failed", "CompressionBomb"],
                JSON.stringify(bombed)
              )
              assert.strictEqual((yield* cursors.get("poc-in-github"))!.cursor.lastDelta, healedSha)
            })
          ),
        { timeout: 60_000 }
      )
    })
  }
)
