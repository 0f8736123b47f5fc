import { NodeServices } from "@effect/platform-node"
import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Command } from "effect/cli"
import { RpcTest } from "effect/rpc"
import { TestConsole } from "effect/testing"
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { IngestClient, ingestCommand } from "../../src/cli/IngestCommand.ts"
import { IngestRpcHandlers } from "../../src/ingest/IngestRpcHandlers.ts"
import { IngestRpcs } from "../../src/ingest/IngestRpcs.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { DATA } from "./manifestCheck.ts"

const dir = mkdtempSync(join(tmpdir(), "vdb-ingest-cli-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
cpSync(join(DATA, "sources/cisa-kev"), join(dir, "kev"), { recursive: true })
mkdirSync(join(dir, "bad"))
writeFileSync(join(dir, "bad/CVE-2024-0001.json"), "{\"cveID\": ")
mkdirSync(join(dir, "escapes"))
writeFileSync(join(dir, "escapes", "x\u001b[31m.json"), "\u001b]0;pwned\u0007")
mkdirSync(join(dir, "loop/a"), { recursive: true })
cpSync(join(DATA, "sources/cisa-kev"), join(dir, "loop/kev"), { recursive: true })
symlinkSync("..", join(dir, "loop/a/up"))
mkdirSync(join(dir, "empty"))
mkdirSync(join(dir, "notes/docs"), { recursive: true })
writeFileSync(join(dir, "notes/README.md"), "not data")
writeFileSync(join(dir, "notes/docs/kev.json"), "{}")
mkdirSync(join(dir, "export"))
writeFileSync(
  join(dir, "export/kev.data"),
  "cveID,vendorProject,product,vulnerabilityName,dateAdded\nCVE-2099-0001,acme,widget,Widget RCE,2024-01-02\n"
)

const Client = Layer.effect(IngestClient, RpcTest.makeClient(IngestRpcs)).pipe(Layer.provide(IngestRpcHandlers))
const TestLayer = Client.pipe(Layer.provideMerge(VulnStore.layerMemory), Layer.provideMerge(TestConsole.layer))

const cli = Command.runWith(ingestCommand, { version: "test" })

const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const before = { out: (yield* TestConsole.logLines).length, err: (yield* TestConsole.errorLines).length }
    const exit = yield* Effect.exit(cli(args).pipe(Effect.provide(NodeServices.layer)))
    const out = (yield* TestConsole.logLines).slice(before.out).map(String)
    const err = (yield* TestConsole.errorLines).slice(before.err).map(String)
    const error = exit._tag === "Failure"
      ? String((exit.cause.reasons[0] as { error?: { message?: string } })?.error?.message)
      : undefined
    return { out, err, error }
  })

describe("bin/vdb ingest (admin RPCs, in-process)", () => {
  layer(TestLayer, { excludeTestServices: true })((it) => {
    it.effect("ingests a source folder, then reports everything unchanged", () =>
      Effect.gen(function*() {
        const first = yield* run(["cisa-kev", join(dir, "kev"), "--json"])
        assert.isUndefined(first.error)
        const summary = JSON.parse(first.out.join("\n"))
        assert.deepStrictEqual([summary.files, summary.inserted, summary.skipped], [44, 44, 0])
        const again = yield* run(["cisa-kev", join(dir, "kev")])
        assert.isUndefined(again.error)
        assert.include(again.out, "unchanged: 44")
        assert.include(again.out, "inserted: 0")
        const store = yield* VulnStore
        assert.deepStrictEqual((yield* store.lookup("CVE-2021-44228")).records.map((r) => r.source), ["cisa-kev"])
      }))

    it.effect("a bad record is reported with its position and the run exits non-zero", () =>
      Effect.gen(function*() {
        const bad = yield* run(["cisa-kev", join(dir, "bad")])
        assert.match(bad.error!, /^1 item skipped/)
        assert.isTrue(
          bad.err.some((l) => l.startsWith(`skipped ${join(dir, "bad")}/CVE-2024-0001.json`)),
          bad.err.join("\n")
        )
        assert.include(bad.out, "skipped: 1")
      }))

    it.effect("unknown source and unreadable path are clear errors; --failed lists nothing", () =>
      Effect.gen(function*() {
        assert.match((yield* run(["nope", dir])).error!, /unknown source "nope"/)
        assert.match((yield* run(["osv", join(dir, "missing")])).error!, /cannot read .*missing/)
        assert.deepStrictEqual((yield* run(["--failed"])).out, ["no failed normalisations"])
      }))

    it.effect("a directory that gives nothing to ingest is an error, not a run over zero files", () =>
      Effect.gen(function*() {
        const empty = yield* run(["osv", join(dir, "empty")])
        assert.strictEqual(
          empty.error,
          `nothing to ingest in ${join(dir, "empty")}: the directory holds no files (names starting with . are skipped)`
        )
        assert.deepStrictEqual([empty.out, empty.err], [[], []])
        const all = yield* run(["--all", join(dir, "notes")])
        assert.match(
          all.error!,
          /^nothing to ingest under .*notes: none of its 2 files is upstream data in a source folder/
        )
        assert.include(all.error!, "README.md (not inside a source folder)")
        assert.include(all.error!, "docs/kev.json (folder docs is not a known source)")
        assert.match(
          (yield* run(["--all", join(dir, "empty")])).error!,
          /^nothing to ingest under .*empty: the directory holds no files/
        )
        // A directory with data beside an empty one still names the empty one.
        const mixed = yield* run(["cisa-kev", join(dir, "kev"), join(dir, "empty")])
        assert.match(mixed.error!, /^nothing to ingest in .*empty/)
        assert.deepStrictEqual([mixed.out, mixed.err], [[], []])
      }))

    it.effect("a file's name and content reach the terminal with their control characters escaped", () =>
      Effect.gen(function*() {
        const run1 = yield* run(["osv", join(dir, "escapes")])
        const shown = [...run1.err, ...run1.out].join("\n")
        assert.notMatch(shown, /\u001b|\u0007/)
        assert.include(run1.err.join("\n"), "x\\u001b[31m.json: malformed JSON: unexpected character U+001B")
      }))

    it.effect("a device, FIFO or socket is refused at once, in the CLI, before anything is read or sent", () =>
      Effect.gen(function*() {
        const started = Date.now()
        const urandom = yield* run(["mitre", "/dev/urandom"])
        assert.match(
          urandom.error!,
          /^\/dev\/urandom is a character device: only regular files, directories and - \(standard input\)/
        )
        assert.deepStrictEqual([urandom.out, urandom.err], [[], []])
        assert.isBelow(Date.now() - started, 5000)
        assert.match((yield* run(["--all", dir, "-"])).error!, /--all DIR takes no SOURCE or PATH/)
      }))

    it.effect("a symlink back up the tree is a cycle: its files are read once", () =>
      Effect.gen(function*() {
        const looped = yield* run(["cisa-kev", join(dir, "loop"), "--json"])
        assert.isUndefined(looped.error, looped.err.join("\n"))
        assert.strictEqual(JSON.parse(looped.out.join("\n")).files, 44)
      }))

    it.effect("--format csv for a source that has no CSV form is refused before anything is read", () =>
      Effect.gen(function*() {
        const refused = yield* run(["osv", join(dir, "export/kev.data"), "--format", "csv"])
        assert.strictEqual(
          refused.error,
          "--format csv: osv has no CSV form (CSV is read for epss, exploit-db, cisa-kev, vulncheck-kev)"
        )
        assert.deepStrictEqual([refused.out, refused.err], [[], []])
      }))

    it.effect("--format reads a file as that format whatever its name", () =>
      Effect.gen(function*() {
        const csv = yield* run(["cisa-kev", join(dir, "export/kev.data"), "--format", "csv", "--json"])
        assert.isUndefined(csv.error, csv.err.join("\n"))
        assert.strictEqual(JSON.parse(csv.out.join("\n")).inserted, 1)
      }))
  })
})
