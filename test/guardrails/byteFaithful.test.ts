import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import fc from "fast-check"
import { makeGuardrails } from "../../src/guardrails/Guardrails.ts"
import { memoryGuardrailStore } from "../../src/guardrails/GuardrailStore.ts"
import { type BodyEdit, spliceEdits, spliceStrings } from "../../src/guardrails/JsonSplice.ts"
import type { JsonPath } from "../../src/guardrails/TextSegments.ts"

/**
 * A JSON writer with randomised (but valid) spelling: whitespace anywhere
 * between tokens, characters written raw or as `\uXXXX`, short escapes,
 * `\/`, numbers as `1`, `1.0` or `1e0`. It records the byte range of every
 * string value by path, which is the ground truth the splice is held to.
 */
const writeJson = (value: unknown, seed: number) => {
  let state = seed >>> 0
  const random = () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]!
  const chunks: Array<Buffer> = []
  const ranges = new Map<string, { start: number; end: number }>()
  let size = 0
  const emit = (text: string) => {
    const bytes = Buffer.from(text, "utf8")
    chunks.push(bytes)
    size += bytes.length
  }
  const ws = () => {
    if (random() < 0.5) return
    let out = ""
    const n = 1 + Math.floor(random() * 3)
    for (let i = 0; i < n; i++) out += pick([" ", "\n", "\t", "\r\n", "  "])
    emit(out)
  }
  const hex = (unit: number) => `\\u${unit.toString(16).padStart(4, "0")}`
  const short: Record<string, string> = { "\"": "\\\"", "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" }
  const string = (text: string) => {
    let out = "\""
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i)
      const ch = text[i]!
      const high = unit >= 0xd800 && unit <= 0xdbff
      const pairOk = high && i + 1 < text.length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff
      if (high && pairOk) {
        out += random() < 0.5 ? text.slice(i, i + 2) : hex(unit) + hex(text.charCodeAt(i + 1))
        i++
      } else if (unit >= 0xd800 && unit <= 0xdfff) out += hex(unit)
      else if (short[ch] !== undefined) out += random() < 0.7 ? short[ch] : hex(unit)
      else if (unit < 0x20) out += hex(unit)
      else if (ch === "/") out += pick(["/", "\\/"])
      else out += random() < 0.15 ? hex(unit) : ch
    }
    emit(out + "\"")
  }
  const walk = (node: unknown, path: JsonPath) => {
    ws()
    if (typeof node === "string") {
      const start = size
      string(node)
      ranges.set(JSON.stringify(path), { start, end: size })
    } else if (typeof node === "number") {
      emit(Number.isInteger(node) && Math.abs(node) < 1e6 ? pick([`${node}`, `${node}.0`, `${node}e0`]) : JSON.stringify(node))
    } else if (node === null || typeof node === "boolean") emit(String(node))
    else if (Array.isArray(node)) {
      emit("[")
      node.forEach((item, i) => {
        if (i > 0) emit(",")
        walk(item, [...path, i])
      })
      ws()
      emit("]")
    } else {
      emit("{")
      Object.entries(node as Record<string, unknown>).forEach(([key, item], i) => {
        if (i > 0) emit(",")
        ws()
        string(key)
        ws()
        emit(":")
        walk(item, [...path, key])
      })
      ws()
      emit("}")
    }
    ws()
  }
  walk(value, [])
  return { bytes: Buffer.concat(chunks), ranges }
}

const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.string({ maxLength: 20 }),
  fc.constantFrom("", "\"", "\\", "\n\u0000\u001f", "😀 é \u2028", "\ud800", "/\\/")
)

const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => n === 0 ? 0 : n),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    // No key that is one backslash: Node 24's V8 (13.6) then reads every later one-character escaped
    // key (`"\""`, `"\n"`, `"\/"`, ...) as a backslash too, in the same process (`JSON.parse('{"\\":1}')`
    // then `JSON.parse('{"\"":1}')` gives the key `\`), so `JSON.parse` stops being this test's oracle.
    fc.dictionary(text.filter((key) => key !== "\\"), tie("value"), { maxKeys: 4 })
  )
})).value

const stringPaths = (value: unknown, path: JsonPath = []): Array<JsonPath> => {
  if (typeof value === "string") return [path]
  if (Array.isArray(value)) return value.flatMap((item, i) => stringPaths(item, [...path, i]))
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => stringPaths(item, [...path, key]))
  }
  return []
}

const setAt = (root: unknown, path: JsonPath, replacement: string): unknown => {
  if (path.length === 0) return replacement
  const [head, ...rest] = path
  if (Array.isArray(root)) return root.map((item, i) => i === head ? setAt(item, rest, replacement) : item)
  const object = root as Record<string, unknown>
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, k === head ? setAt(v, rest, replacement) : v]))
}

/** The original with exactly the given literal ranges replaced by the JSON encoding of their new text. */
const expectedBytes = (
  bytes: Buffer,
  ranges: Map<string, { start: number; end: number }>,
  edits: ReadonlyArray<{ path: JsonPath; text: string }>
) => {
  const spans = edits.map((e) => ({ ...ranges.get(JSON.stringify(e.path))!, text: e.text }))
    .sort((a, b) => a.start - b.start)
  const parts: Array<Buffer> = []
  let at = 0
  for (const span of spans) {
    parts.push(bytes.subarray(at, span.start), Buffer.from(JSON.stringify(span.text)))
    at = span.end
  }
  parts.push(bytes.subarray(at))
  return Buffer.concat(parts)
}

/** Every member and element path below the root (the removable places). */
const memberPaths = (value: unknown, path: JsonPath = []): Array<JsonPath> => {
  const entries: Array<[string | number, unknown]> = Array.isArray(value)
    ? value.map((item, i) => [i, item])
    : typeof value === "object" && value !== null
    ? Object.entries(value)
    : []
  return entries.flatMap(([key, item]) => [[...path, key], ...memberPaths(item, [...path, key])])
}

/** The document with `removed` paths taken out and string `edits` applied (those inside a removal are moot). */
const applied = (value: unknown, removed: ReadonlySet<string>, edits: ReadonlyMap<string, string>, path: JsonPath = []): unknown => {
  const here = JSON.stringify(path)
  if (typeof value === "string") return edits.get(here) ?? value
  if (Array.isArray(value)) {
    return value.flatMap((item, i) => removed.has(JSON.stringify([...path, i])) ? [] : [applied(item, removed, edits, [...path, i])])
  }
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !removed.has(JSON.stringify([...path, key])))
        .map(([key, item]) => [key, applied(item, removed, edits, [...path, key])])
    )
  }
  return value
}

/** Whether `out` is `bytes` with some ranges deleted (and nothing else changed). */
const isDeletionOf = (out: Buffer, bytes: Buffer) => {
  let j = 0
  for (let i = 0; i < bytes.length && j < out.length; i++) if (bytes[i] === out[j]) j++
  return j === out.length
}

describe("byte-faithful rewriting", () => {
  it("removes members and elements with one separator each: valid JSON, nothing else rewritten", () => {
    fc.assert(
      fc.property(
        jsonValue,
        fc.integer(),
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(), text), { maxLength: 2 }),
        (doc, seed, removalPicks, editPicks) => {
          const paths = memberPaths(doc)
          if (paths.length === 0) return
          const { bytes } = writeJson(doc, seed)
          const removed = new Set(removalPicks.map((n) => JSON.stringify(paths[n % paths.length])))
          const strings = stringPaths(doc).filter((path) => path.length > 0)
          const edited = new Map(strings.length === 0 ? [] : editPicks.map(([n, t]) => [JSON.stringify(strings[n % strings.length]), t] as const))
          const edits: Array<BodyEdit> = [
            ...[...removed].map((path) => ({ path: JSON.parse(path) as JsonPath, remove: true as const })),
            ...[...edited].map(([path, t]) => ({ path: JSON.parse(path) as JsonPath, text: t }))
          ]
          const out = spliceEdits(bytes, edits)
          assert.isDefined(out)
          assert.deepStrictEqual(JSON.parse(Buffer.from(out!).toString()), applied(doc, removed, edited))
          if (edited.size === 0) assert.isTrue(isDeletionOf(Buffer.from(out!), bytes))
        }
      ),
      { numRuns: 400 }
    )
  })

  it("a removal keeps the rest of the client's spelling; a key named twice on its path is left to re-serialising", () => {
    const bytes = Buffer.from(`{ "seed" : 12345678901234567890, "tools": [ {"n":"a"} ,\n {"n":"b"}, {"n":"c"} ], "x": 1.0 }`)
    const middle = spliceEdits(bytes, [{ path: ["tools", 1], remove: true }])
    assert.strictEqual(Buffer.from(middle!).toString(), `{ "seed" : 12345678901234567890, "tools": [ {"n":"a"} ,\n {"n":"c"} ], "x": 1.0 }`)
    const last = spliceEdits(bytes, [{ path: ["tools", 2], remove: true }, { path: ["x"], remove: true }])
    assert.strictEqual(Buffer.from(last!).toString(), `{ "seed" : 12345678901234567890, "tools": [ {"n":"a"} ,\n {"n":"b"} ] }`)
    const all = spliceEdits(bytes, [0, 1, 2].map((i) => ({ path: ["tools", i], remove: true as const })))
    assert.strictEqual(Buffer.from(all!).toString(), `{ "seed" : 12345678901234567890, "tools": [  ], "x": 1.0 }`)
    const twice = Buffer.from(`{"tools":[{"n":"a"}],"tools":[{"n":"b"},{"n":"c"}]}`)
    assert.isUndefined(spliceEdits(twice, [{ path: ["tools", 0], remove: true }]))
    assert.isUndefined(spliceEdits(bytes, [{ path: ["absent"], remove: true }]))
  })


  it("splices only the edited string literals; everything else is byte-identical", () => {
    fc.assert(
      fc.property(
        jsonValue,
        fc.integer(),
        fc.array(fc.tuple(fc.nat(), text), { maxLength: 5 }),
        (doc, seed, picks) => {
          const { bytes, ranges } = writeJson(doc, seed)
          assert.deepStrictEqual(JSON.parse(bytes.toString()), doc)
          const paths = stringPaths(doc)
          const chosen = new Map<string, { path: JsonPath; text: string }>()
          if (paths.length > 0) {
            for (const [n, replacement] of picks) {
              const path = paths[n % paths.length]!
              chosen.set(JSON.stringify(path), { path, text: replacement })
            }
          }
          const edits = [...chosen.values()]
          const out = spliceStrings(bytes, edits)
          assert.isDefined(out)
          assert.isTrue(Buffer.from(out!).equals(expectedBytes(bytes, ranges, edits)))
          const expected = edits.reduce<unknown>((acc, e) => setAt(acc, e.path, e.text), doc)
          assert.deepStrictEqual(JSON.parse(Buffer.from(out!).toString()), expected)
        }
      ),
      { numRuns: 400 }
    )
  })

  it("a duplicate key is edited where JSON.parse read it (the last occurrence)", () => {
    const bytes = Buffer.from(`{"a":"first","a":"second","b":["x"]}`)
    const out = spliceStrings(bytes, [{ path: ["a"], text: "edited" }])
    assert.strictEqual(Buffer.from(out!).toString(), `{"a":"first","a":"edited","b":["x"]}`)
    assert.isUndefined(spliceStrings(bytes, [{ path: ["b", 3], text: "nowhere" }]))
  })

  it.effect("a redaction through the engine changes only the redacted literals (chat, random spelling)", () =>
    Effect.gen(function*() {
      const guardrails = yield* makeGuardrails({ store: memoryGuardrailStore(), ttl: Duration.minutes(1), failOpen: false })
      const org = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
      yield* guardrails.create(org, { name: "ssn", rule_type: "pii_redact", pattern: "\\d{3}-\\d{2}-\\d{4}" })
      const ssn = /\d{3}-\d{2}-\d{4}/gu
      const content = fc.array(fc.oneof(text, fc.constant("123-45-6789")), { maxLength: 4 }).map((parts) => parts.join(" "))
      const chatDoc = fc.record({
        model: fc.constant("gpt"),
        messages: fc.array(
          fc.oneof(
            fc.record({ role: fc.constantFrom("system", "user", "tool"), content }),
            fc.record({
              role: fc.constant("assistant"),
              content: fc.constant(null),
              tool_calls: fc.constant([{ id: "c", type: "function", function: { name: "f", arguments: "{\"ssn\":\"123-45-6789\"}" } }])
            })
          ),
          { minLength: 1, maxLength: 5 }
        )
      })
      const samples = fc.sample(fc.tuple(chatDoc, fc.integer()), { numRuns: 200, seed: 42 })
      for (const [doc, seed] of samples) {
        const { bytes, ranges } = writeJson(doc, seed)
        const outcome = yield* guardrails.evaluate(org, "chat", bytes, JSON.parse(bytes.toString()))
        const edits = doc.messages.flatMap((m, i) =>
          typeof m.content === "string" && m.content.replace(ssn, "[REDACTED]") !== m.content
            ? [{ path: ["messages", i, "content"] as JsonPath, text: m.content.replace(ssn, "[REDACTED]") }]
            : []
        )
        if (edits.length === 0) {
          assert.isUndefined(outcome.body)
          continue
        }
        assert.strictEqual(outcome.decision, "redact")
        assert.isTrue(Buffer.from(outcome.body!).equals(expectedBytes(bytes, ranges, edits)))
        const expected = edits.reduce<unknown>((acc, e) => setAt(acc, e.path, e.text), doc)
        assert.deepStrictEqual(JSON.parse(Buffer.from(outcome.body!).toString()), expected)
      }
    }))
})
