import { describe as effectDescribe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestConsole } from "effect/testing"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { versionsCommand } from "../../src/cli/VersionsCommands.ts"
import { cliRunner } from "../support/cliRun.ts"
import { ROOT, runVdb } from "../support/processes.ts"

const FIXTURES = join(ROOT, "test/fixtures/version-order")

/** Each vector file of OSV's scanner library (test/fixtures/version-order/PROVENANCE.md) and the ecosystem it is for. */
const FILES: ReadonlyArray<readonly [string, string]> = [
  ["alpine-versions.txt", "Alpine"],
  ["cran-versions.txt", "CRAN"],
  ["debian-versions.txt", "Debian"],
  ["hackage-versions.txt", "Hackage"],
  ["maven-versions.txt", "Maven"],
  ["nuget-versions.txt", "NuGet"],
  ["packagist-versions.txt", "Packagist"],
  ["pub-versions.txt", "Pub"],
  ["pypi-versions.txt", "PyPI"],
  ["redhat-versions.txt", "Red Hat"],
  ["rubygems-versions.txt", "RubyGems"],
  ["semver-versions.txt", "npm"]
]

/** The comparison lines of a file: what `N passed` must count. */
const comparisons = (text: string) =>
  text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("//") && !l.startsWith("#")).length

/** A data directory that must stay absent: `versions compare` needs no database. */
const untouchedDataDir = () => join(mkdtempSync(join(tmpdir(), "vdb-versions-")), "data")

// One process per file, as a user runs it (one after another: each is mostly start-up, CPU-bound).
describe("bin/vdb versions compare", () => {
  it.each(FILES)("passes every line of %s (%s)", async (file, ecosystem) => {
    const vectors = readFileSync(join(FIXTURES, file), "utf8")
    const dataDir = untouchedDataDir()
    const run = await runVdb(["versions", "compare", ecosystem], { VDB_DATA_DIR: dataDir }, vectors)
    expect(run.stdout).toBe(`${comparisons(vectors)} passed, 0 failed\n`)
    expect(run.code).toBe(0)
    expect(existsSync(dataDir)).toBe(false)
  })

  it("prints each disagreeing line with what it computed, then the counts, and exits 1", async () => {
    const input = [
      "// a comment, then a blank line",
      "",
      "1.0.0 < 2.0.0",
      "1.0.0-rc.1 > 1.0.0",
      "# the vectors also use # comments",
      "1.0 = 1.0.0",
      "not a comparison",
      "v1.2.3+build = 1.2.3"
    ].join("\n")
    const run = await runVdb(["versions", "compare", "npm"], {}, input)
    expect(run.stdout.split("\n")).toEqual([
      "line 4: 1.0.0-rc.1 > 1.0.0: computed 1.0.0-rc.1 < 1.0.0",
      "line 7: not a comparison: not of the form A < B, A = B or A > B",
      "3 passed, 2 failed",
      ""
    ])
    expect(run.stderr).toContain("2 of 5 comparisons disagree with vdb's npm order")
    expect(run.code).toBe(1)
  })
})

const run = cliRunner(versionsCommand)

effectDescribe("versions compare (in-process)", () => {
  layer(TestConsole.layer)((it) => {
    it.effect("accepts OSV's suffixed ecosystem names and reports a version it cannot read on its line", () =>
      Effect.gen(function*() {
        const result = yield* run(["compare", "Debian:12"], "1:2.0~rc1-1 < 1:2.0-1\n1: < 1.0\n")
        expect(result.out).toEqual([
          "line 2: 1: < 1.0: version \"1:\" is not a Debian version: it has an empty upstream version",
          "1 passed, 1 failed"
        ])
        expect(result.error).toBe("1 of 2 comparisons disagree with vdb's Debian order")
      }))

    it.effect("refuses an ecosystem it has no order for, naming the ones it has, before reading stdin", () =>
      Effect.gen(function*() {
        const result = yield* run(["compare", "Cargo"], "1 < 2\n")
        expect(result.out).toEqual([])
        expect(result.error).toMatch(
          /^ecosystem "Cargo" is not supported for version ordering \(supported: npm, crates\.io, Go,/
        )
      }))
  })
})
