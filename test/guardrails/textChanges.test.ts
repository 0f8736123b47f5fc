import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { changesBetween, type TextChange } from "../../src/guardrails/TextChanges.ts"

const applied = (before: string, changes: ReadonlyArray<TextChange>) => {
  let out = ""
  let at = 0
  for (const change of changes) {
    assert.isAtLeast(change.start, at, "sorted and disjoint")
    assert.isAtLeast(change.end, change.start)
    out += before.slice(at, change.start) + change.text
    at = change.end
  }
  return out + before.slice(at)
}

/** The characters of `before` no change touches, in order. */
const kept = (before: string, changes: ReadonlyArray<TextChange>) =>
  applied(before, changes.map((c) => ({ ...c, text: "" })))

const R = "[REDACTED]"

describe("changesBetween", () => {
  it("the changes always spell the new text", () => {
    const text = fc.string({
      unit: fc.constantFrom("a", "b", "[", "]", "D", " ", "é", "\ud83d", "\ude00", "1", "-"),
      maxLength: 60
    })
    fc.assert(
      fc.property(text, text, (before, after) => {
        assert.strictEqual(applied(before, changesBetween(before, after)), after)
      }),
      { numRuns: 500 }
    )
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.string({ unit: "binary", maxLength: 200 }),
        (before, after) => {
          assert.strictEqual(applied(before, changesBetween(before, after)), after)
        }
      )
    )
  })

  it("a redaction's spans, however close, and the text between them kept", () => {
    const before = "ssn 123-45-6789/987-65-4321]]x000-00-0000 and 111-22-3333 end"
    const after = `ssn ${R}/${R}]]x${R} and ${R} end`
    assert.deepStrictEqual(changesBetween(before, after), [
      { start: 4, end: 15, text: R },
      { start: 16, end: 27, text: R },
      { start: 30, end: 41, text: R },
      { start: 46, end: 57, text: R }
    ])
  })

  it("removed blocks, and a long match with text after it", () => {
    const before = `keep <plan nonce="a">x</plan> mid <goal nonce="b">y</goal> end`
    assert.deepStrictEqual(changesBetween(before, "keep  mid  end"), [
      { start: 5, end: 29, text: "" },
      { start: 34, end: 58, text: "" }
    ])
    const key = `-----BEGIN PRIVATE KEY-----${"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC".repeat(50)}-----END PRIVATE KEY-----`
    const long = `head é ${key} tail \u00e9 / ${key} more text`
    const changes = changesBetween(long, long.split(key).join(R))
    assert.strictEqual(applied(long, changes), `head é ${R} tail \u00e9 / ${R} more text`)
    // Whatever of the key is kept equals the replacement's characters; all the text around it is kept.
    assert.strictEqual(kept(long, changes).replace(/[REDACT[\]]/g, ""), "head é  tail é /  more text")
  })

  it("large and unalike texts: bounded, and still exact", () => {
    let seed = 7
    const random = (n: number) => {
      let out = ""
      for (let i = 0; i < n; i++) {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff
        out += String.fromCharCode(0x21 + (seed % 90))
      }
      return out
    }
    const before = random(1_000_000)
    const after = random(1_000_000)
    const started = performance.now()
    assert.strictEqual(applied(before, changesBetween(before, after)), after)
    const many = Array.from({ length: 20_000 }, (_, i) => `w${i % 10}${i % 7} 123-45-6789`).join("")
    const redacted = many.replace(/\d{3}-\d{2}-\d{4}/g, R)
    assert.strictEqual(applied(many, changesBetween(many, redacted)), redacted)
    // Generous: the two take well under a second on a loaded 2-core VM; a quadratic search takes minutes.
    assert.isBelow(performance.now() - started, 20_000)
  })
})
