import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { compareVersions, type Ordering, versionOrder } from "../../src/versions/VersionOrder.ts"
import { sign } from "../../src/versions/VersionScheme.ts"

/**
 * Each ecosystem's edge cases, as chains: `["a", "<", "b", "=", "c"]` says a < b and b = c.
 * Every pair is checked both ways round, so an order that is not antisymmetric fails too.
 */
const CHAINS: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
  ["npm", "pre-releases below the release, identifiers numeric < alphanumeric, build ignored", [
    "1.0.0-alpha",
    "<",
    "1.0.0-alpha.1",
    "<",
    "1.0.0-alpha.beta",
    "<",
    "1.0.0-beta.2",
    "<",
    "1.0.0-beta.11",
    "<",
    "1.0.0-rc.1",
    "<",
    "1.0.0",
    "=",
    "1.0.0+build.7",
    "=",
    "v1.0.0",
    "<",
    "1.0.1"
  ]],
  ["npm", "numbers past 2^64", ["18446744073709551615.0.0", "<", "18446744073709551616.0.0"]],
  ["crates.io", "SemVer", ["0.9.0", "<", "0.10.0-rc.1", "<", "0.10.0"]],
  ["Hex", "SemVer", ["1.0.0-rc.0", "<", "1.0.0"]],
  ["Go", "pseudo-versions order by their timestamp, between the releases around them", [
    "v0.0.0-20191109021931-daa7c04131f5",
    "<",
    "v0.0.0-20200101000000-000000000000",
    "<",
    "v0.0.1",
    "<",
    "v1.2.3",
    "<",
    "v1.2.4-0.20191109021931-daa7c04131f5",
    "<",
    "v1.2.4"
  ]],
  ["Go", "+incompatible is build metadata", ["v1.9.9", "<", "v2.0.0+incompatible", "=", "v2.0.0", "=", "2.0.0"]],
  ["Pub", "a build counts, above the same version without one", [
    "1.0.0-dev",
    "<",
    "1.0.0",
    "<",
    "1.0.0+1",
    "<",
    "1.0.0+2",
    "<",
    "1.0.0+a"
  ]],
  ["PyPI", "dev < pre < release < post; spellings normalised", [
    "1.0.dev0",
    "<",
    "1.0a0",
    "<",
    "1.0alpha1",
    "=",
    "1.0.a1",
    "<",
    "1.0b0",
    "<",
    "1.0c1",
    "=",
    "1.0rc1",
    "<",
    "1.0",
    "=",
    "1.0.0",
    "=",
    "v1.0",
    "<",
    "1.0.post0.dev0",
    "<",
    "1.0-0",
    "=",
    "1.0.post0",
    "<",
    "1.0.post1",
    "<",
    "1.1.dev0"
  ]],
  ["PyPI", "epochs outrank releases", ["2013.10", "<", "1!0.1", "<", "2!0.0.1"]],
  ["PyPI", "local labels: none lowest, letters below numbers, numbers numerically", [
    "1.0",
    "<",
    "1.0+1e5",
    "<",
    "1.0+abc",
    "<",
    "1.0+abc.1",
    "<",
    "1.0+2",
    "<",
    "1.0+10",
    "=",
    "1.0+010"
  ]],
  ["PyPI", "legacy (non-PEP 440) versions below every PEP 440 version", ["foo-bar", "<", "0.0.0.dev0"]],
  ["Maven", "qualifier order", [
    "1.0-alpha-1",
    "<",
    "1.0-beta-1",
    "<",
    "1.0-milestone-1",
    "<",
    "1.0-rc-1",
    "=",
    "1.0-CR-1",
    "<",
    "1.0-SNAPSHOT",
    "<",
    "1.0",
    "=",
    "1.0.0",
    "=",
    "1-ga",
    "=",
    "1.0-final",
    "=",
    "1.0.RELEASE",
    "<",
    "1.0-sp-1",
    "<",
    "1.0-abc",
    "<",
    "1.0-1",
    "<",
    "1.0.1"
  ]],
  ["Maven", "a, b, m abbreviate before a number only", ["1.0a1", "=", "1.0-alpha-1", "<", "1.0m1", "<", "1.0-a"]],
  ["Maven", "a trailing qualifier is a sub-list, as after a hyphen", [
    "1.foo",
    "=",
    "1-foo",
    "<",
    "1.0.0.x1",
    "<",
    "1.0.0-x2"
  ]],
  ["Maven", "a release qualifier between hyphens merges the levels (the spec, OSV); a 0 does not (3.8.7)", [
    "1-0-1",
    "<",
    "1-1",
    "=",
    "1-ga-1",
    "=",
    "1.0-final-1"
  ]],
  ["RubyGems", "a letter makes a pre-release", [
    "1.0.a",
    "<",
    "1.0.b1",
    "<",
    "1.0-pre",
    "<",
    "1.0",
    "=",
    "1",
    "<",
    "1.9.9",
    "<",
    "1.10"
  ]],
  ["NuGet", "four numbers, case-insensitive labels, metadata ignored", [
    "1.0.0-alpha",
    "<",
    "1.0.0-Alpha.1",
    "<",
    "1.0.0-beta",
    "=",
    "1.0.0-BETA",
    "<",
    "1.0",
    "=",
    "1.0.0.0",
    "=",
    "1.0.0+meta",
    "<",
    "1.0.0.1"
  ]],
  ["Packagist", "PHP version_compare", [
    "1.0.0-dev",
    "<",
    "1.0.0-alpha1",
    "<",
    "1.0.0-beta2",
    "<",
    "1.0.0-RC1",
    "=",
    "1.0.0rc1",
    "<",
    "1.0.0",
    "=",
    "v1.0.0",
    "<",
    "1.0.0-patch1",
    "=",
    "1.0.0pl1",
    "<",
    "1.0.1"
  ]],
  ["Debian", "tildes below anything, even the end; epochs outrank everything", [
    "1.0~~",
    "<",
    "1.0~",
    "<",
    "1.0~rc1",
    "<",
    "1.0",
    "=",
    "1.0-0",
    "=",
    "0:1.0",
    "<",
    "1.0-1",
    "<",
    "1.0-1+deb12u1",
    "<",
    "1.0a",
    "<",
    "1.0+",
    "<",
    "1.0.1",
    "<",
    "1:0.1"
  ]],
  ["Alpine", "suffix order, letters, revisions", [
    "1.0_alpha1",
    "<",
    "1.0_beta",
    "<",
    "1.0_pre2",
    "<",
    "1.0_rc1",
    "<",
    "1.0",
    "=",
    "1.0-r0",
    "<",
    "1.0-r1",
    "<",
    "1.0_cvs",
    "<",
    "1.0_svn",
    "<",
    "1.0_git",
    "<",
    "1.0_hg",
    "<",
    "1.0_p1",
    "<",
    "1.0a",
    "<",
    "1.0b",
    "<",
    "1.0.0",
    "<",
    "1.1"
  ]],
  ["Alpine", "after the first number, leading zeros rank below (apk 2.x)", [
    "1.00",
    "<",
    "1.001",
    "<",
    "1.0",
    "<",
    "1.0a",
    "<",
    "1.01",
    "<",
    "1.09",
    "<",
    "1.010",
    "<",
    "1.1",
    "<",
    "1.10",
    "<",
    "01.11",
    "=",
    "1.11"
  ]],
  ["Alpine", "after a suffix: a pre-release suffix < the end < a number < a post-release suffix, as apk reads them", [
    "1.0_rc_alpha",
    "<",
    "1.0_rc",
    "<",
    "1.0_rc0",
    "<",
    "1.0_rc1",
    "<",
    "1.0_rc_p",
    "<",
    "1.0",
    "<",
    "1.0_p",
    "<",
    "1.0_p0"
  ]],
  ["Red Hat", "~ below the end, ^ above it but below more version", [
    "1.0~rc1",
    "<",
    "1.0",
    "<",
    "1.0^git1",
    "<",
    "1.0^git2",
    "<",
    "1.0.1",
    "<",
    "1:0.1"
  ]],
  ["Red Hat", "releases; no release is below any", ["1.0", "<", "1.0-1.el9", "<", "1.0-2.el9", "<", "1.0-10.el9"]],
  ["Red Hat", "digits outrank letters, separators only separate", [
    "1.0a",
    "<",
    "1.0.1",
    "=",
    "1_0_1",
    "<",
    "2.0.1",
    "<",
    "2.0.1a"
  ]],
  ["CRAN", "- and . weigh the same; more components is higher", [
    "0.9",
    "<",
    "0.10",
    "<",
    "1.0",
    "<",
    "1.0-0",
    "=",
    "1.0.0",
    "<",
    "1.0-1"
  ]],
  ["Hackage", "lists of numbers", ["0.9", "<", "0.10", "<", "1.0", "<", "1.0.0", "<", "1.0.0.1"]]
]

const ORDERING = { "<": -1, "=": 0, ">": 1 } as const

describe("version order per ecosystem", () => {
  for (const [ecosystem, what, chain] of CHAINS) {
    it(`${ecosystem}: ${what}`, () => {
      const order = Result.getOrThrow(versionOrder(ecosystem))
      for (let i = 0; i + 2 < chain.length; i += 2) {
        const [a, op, b] = [chain[i]!, chain[i + 1] as keyof typeof ORDERING, chain[i + 2]!]
        const expected: Ordering = ORDERING[op]
        assert.deepStrictEqual(order.compare(a, b), Result.succeed(expected), `${a} ${op} ${b}`)
        assert.deepStrictEqual(order.compare(b, a), Result.succeed(sign(-expected)), `${b} against ${a}`)
      }
    })
  }

  it("names ecosystems as OSV spells them, with or without a release suffix or the same case", () => {
    const names = [
      "Debian:12",
      "Alpine:v3.19",
      "Ubuntu:22.04:LTS",
      "pypi",
      "Red Hat:enterprise_linux:9::appstream",
      "crates.io"
    ]
    assert.deepStrictEqual(
      names.map((name) => Result.map(versionOrder(name), (o) => o.ecosystem)),
      ["Debian", "Alpine", "Ubuntu", "PyPI", "Red Hat", "crates.io"].map(Result.succeed)
    )
  })

  it("refuses an unsupported ecosystem with a typed error that names the supported ones", () => {
    const error = Result.getFailure(versionOrder("Cargo"))
    assert.strictEqual(error._tag, "Some")
    const reason = error._tag === "Some" ? error.value.reason : undefined
    assert.strictEqual(reason?._tag, "UnsupportedEcosystem")
    assert.match(String(reason?.message), /^ecosystem "Cargo" is not supported for version ordering \(supported: npm, /)
  })

  it("refuses a text that is not a version of the ecosystem, saying why", () => {
    const cases: ReadonlyArray<readonly [string, string, RegExp]> = [
      ["npm", "latest", /^version "latest" is not a npm version: it does not start with a number$/],
      ["Debian", "1:", /is not a Debian version: it has an empty upstream version$/],
      ["Debian", "1.0-", /it has an empty revision/],
      ["NuGet", "1.2.3.4.5", /it has more than four numbers$/],
      ["CRAN", "1.0a", /it is not numbers separated by \. or -$/],
      ["Hackage", "1.0-beta", /it is not numbers separated by \.$/],
      ["PyPI", " ", /^version " " is not a PyPI version: it is empty$/],
      ["RubyGems", "beta1", /it does not start with a number$/]
    ]
    for (const [ecosystem, text, message] of cases) {
      const result = Result.getOrThrow(versionOrder(ecosystem)).compare(text, "1.0")
      assert.isTrue(Result.isFailure(result), `${ecosystem} ${text}`)
      if (Result.isFailure(result)) {
        assert.strictEqual(result.failure.reason._tag, "InvalidVersion")
        assert.match(result.failure.message, message)
      }
    }
  })

  it("does not echo a version that would break a line or flood it", () => {
    const result = Result.getOrThrow(versionOrder("npm")).compare("x\n".repeat(50), "1.0.0")
    assert.isTrue(
      Result.isFailure(result) &&
        result.failure.message === "version is not a npm version: it does not start with a number"
    )
  })

  it.effect("compareVersions is the same order as an Effect, failing with VersionError", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* compareVersions("Maven", "1.0-SNAPSHOT", "1.0"), -1)
      const failure = yield* Effect.flip(compareVersions("Conan", "1", "2"))
      assert.strictEqual(failure._tag, "VersionError")
      assert.strictEqual(failure.reason._tag, "UnsupportedEcosystem")
    }))

  it("parses once and compares parsed versions, as range evaluation will", () => {
    const order = Result.getOrThrow(versionOrder("Debian"))
    const [a, b] = ["2.0~rc1", "2.0"].map((v) => Result.getOrThrow(order.parse(v)))
    assert.strictEqual(order.compareParsed(a!, b!), -1)
  })
})
