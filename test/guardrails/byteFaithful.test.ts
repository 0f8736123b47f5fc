import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import fc from "fast-check"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { makeGuardrails } from "../../src/guardrails/Guardrails.ts"
import { memoryGuardrailStore } from "../../src/guardrails/GuardrailStore.ts"
import type { JsonPath } from "../../src/guardrails/JsonPath.ts"
import { type BodyEdit, spliceEdits, spliceStrings } from "../../src/guardrails/JsonSplice.ts"

/** How one character of a string literal was written: its bytes, and the UTF-16 units they stand for. */
type Token = readonly [raw: string, units: number]

/** A string value's literal: its byte range (quotes included) and how each character was spelled. */
interface Literal {
  readonly start: number
  readonly end: number
  readonly tokens: ReadonlyArray<Token>
}

/**
 * A JSON writer with randomised (but valid) spelling: whitespace anywhere
 * between tokens, characters written raw or as `\uXXXX`, short escapes,
 * `\/`, numbers as `1`, `1.0` or `1e0`. It records the byte range of every
 * string value by path, and how it spelled each of its characters: the
 * ground truth the splice is held to.
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
  const ranges = new Map<string, Literal>()
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
  const short: Record<string, string> = {
    "\"": "\\\"",
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f"
  }
  const string = (text: string): Array<Token> => {
    const tokens: Array<Token> = []
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i)
      const ch = text[i]!
      const high = unit >= 0xd800 && unit <= 0xdbff
      const pairOk = high && i + 1 < text.length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff
      if (high && pairOk) {
        // Raw, a pair is one 4-byte token of two units; escaped, two tokens of one.
        if (random() < 0.5) tokens.push([text.slice(i, i + 2), 2])
        else tokens.push([hex(unit), 1], [hex(text.charCodeAt(i + 1)), 1])
        i++
      } else if (unit >= 0xd800 && unit <= 0xdfff) tokens.push([hex(unit), 1])
      else if (short[ch] !== undefined) tokens.push([random() < 0.7 ? short[ch] : hex(unit), 1])
      else if (unit < 0x20) tokens.push([hex(unit), 1])
      else if (ch === "/") tokens.push([pick(["/", "\\/"]), 1])
      else tokens.push([random() < 0.15 ? hex(unit) : ch, 1])
    }
    emit(`"${tokens.map(([raw]) => raw).join("")}"`)
    return tokens
  }
  const walk = (node: unknown, path: JsonPath) => {
    ws()
    if (typeof node === "string") {
      const start = size
      const tokens = string(node)
      ranges.set(JSON.stringify(path), { start, end: size, tokens })
    } else if (typeof node === "number") {
      emit(
        Number.isInteger(node) && Math.abs(node) < 1e6
          ? pick([`${node}`, `${node}.0`, `${node}e0`])
          : JSON.stringify(node)
      )
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

interface Change {
  readonly start: number
  readonly end: number
  readonly text: string
}

/** `before` with each change applied (sorted, disjoint, in UTF-16 units). */
const applyChanges = (before: string, changes: ReadonlyArray<Change>) => {
  let out = ""
  let at = 0
  for (const change of changes) {
    out += before.slice(at, change.start) + change.text
    at = change.end
  }
  return out + before.slice(at)
}

/**
 * The literal the splice must write for `changes` to a literal spelled `tokens`: each change
 * widened to whole tokens (a raw surrogate pair is one token of two units), changes that share
 * a token joined, each written as `JSON.stringify` spells it; every other token as it was.
 */
const expectedLiteral = (tokens: ReadonlyArray<Token>, changes: ReadonlyArray<Change>): string => {
  const before = tokens.map(([raw]) => JSON.parse(`"${raw}"`) as string).join("")
  const bounds = [0]
  for (const [, units] of tokens) bounds.push(bounds[bounds.length - 1]! + units)
  const floor = (unit: number) => {
    let t = 0
    while (t + 1 < bounds.length && bounds[t + 1]! <= unit) t++
    return t
  }
  const regions: Array<{ from: number; to: number; changes: Array<Change> }> = []
  for (const change of changes) {
    const from = floor(change.start)
    let to = floor(change.end)
    if (bounds[to]! < change.end) to++
    const last = regions[regions.length - 1]
    if (last !== undefined && from < last.to) {
      last.to = Math.max(last.to, to)
      last.changes.push(change)
    } else regions.push({ from, to, changes: [change] })
  }
  let out = "\""
  let token = 0
  for (const region of regions) {
    while (token < region.from) out += tokens[token++]![0]
    const span = before.slice(bounds[region.from], bounds[region.to])
    const shifted = region.changes.map((c) => ({
      ...c,
      start: c.start - bounds[region.from]!,
      end: c.end - bounds[region.from]!
    }))
    out += JSON.stringify(applyChanges(span, shifted)).slice(1, -1)
    token = region.to
  }
  while (token < tokens.length) out += tokens[token++]![0]
  return out + "\""
}

/** The original with each edited literal rewritten as `expectedLiteral` says, and nothing else changed. */
const expectedBytes = (
  bytes: Buffer,
  ranges: Map<string, Literal>,
  edits: ReadonlyArray<{ readonly path: JsonPath; readonly changes: ReadonlyArray<Change> }>
) => {
  const spans = edits.map((e) => ({ literal: ranges.get(JSON.stringify(e.path))!, changes: e.changes }))
    .sort((a, b) => a.literal.start - b.literal.start)
  const parts: Array<Buffer> = []
  let at = 0
  for (const { changes, literal } of spans) {
    parts.push(bytes.subarray(at, literal.start), Buffer.from(expectedLiteral(literal.tokens, changes)))
    at = literal.end
  }
  parts.push(bytes.subarray(at))
  return Buffer.concat(parts)
}

/** Sorted, disjoint changes of a text `length` units long, from random cut points and texts. */
const changesFrom = (length: number, cuts: ReadonlyArray<readonly [number, number, string]>): Array<Change> => {
  const out: Array<Change> = []
  const sorted = cuts.map(([a, b, text]) => {
    const x = a % (length + 1)
    const y = b % (length + 1)
    return { start: Math.min(x, y), end: Math.max(x, y), text }
  }).sort((p, q) => p.start - q.start || p.end - q.end)
  let at = 0
  for (const change of sorted) {
    if (change.start < at) continue
    out.push(change)
    at = change.end
  }
  return out
}

/**
 * Whether `out` is `bytes` with each edited literal replaced by some literal reading as its new
 * text, and every byte outside those literals as it was.
 */
const keepsAllButLiterals = (out: Buffer, bytes: Buffer, edited: ReadonlyArray<{ literal: Literal; text: string }>) => {
  const sorted = [...edited].sort((a, b) => a.literal.start - b.literal.start)
  let from = 0
  let at = 0
  for (const { literal, text } of sorted) {
    const between = bytes.subarray(from, literal.start)
    if (!out.subarray(at, at + between.length).equals(between)) return false
    at += between.length
    let close = at + 1
    while (out[close] !== 0x22) close += out[close] === 0x5c ? 2 : 1
    if (JSON.parse(out.subarray(at, close + 1).toString()) !== text) return false
    at = close + 1
    from = literal.end
  }
  return out.subarray(at).equals(bytes.subarray(from))
}

/**
 * The test's own account of what rules run one after another replace: each character of the
 * text carries the range of the original it stands for (a replacement's characters all carry
 * the union of what their match covered), and runs of replacement characters are the changes.
 */
const redactedSpans = (original: string, rules: ReadonlyArray<RegExp>): Array<Change> => {
  let chars = [...Array(original.length).keys()].map((i) => ({ ch: original[i]!, lo: i, hi: i + 1, written: false }))
  for (const rule of rules) {
    const text = chars.map((c) => c.ch).join("").toWellFormed()
    const next: typeof chars = []
    let at = 0
    for (const found of text.matchAll(rule)) {
      if (found[0] === "") continue
      const covered = chars.slice(found.index, found.index + found[0].length)
      next.push(...chars.slice(at, found.index))
      const lo = Math.min(...covered.map((c) => c.lo))
      const hi = Math.max(...covered.map((c) => c.hi))
      for (const ch of "[REDACTED]") next.push({ ch, lo, hi, written: true })
      at = found.index + found[0].length
    }
    chars = [...next, ...chars.slice(at)]
  }
  const changes: Array<Change> = []
  for (let i = 0; i < chars.length; i++) {
    if (!chars[i]!.written) continue
    let j = i
    while (j + 1 < chars.length && chars[j + 1]!.written) j++
    const run = chars.slice(i, j + 1)
    changes.push({ start: run[0]!.lo, end: run[run.length - 1]!.hi, text: run.map((c) => c.ch).join("") })
    i = j
  }
  return changes
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
const applied = (
  value: unknown,
  removed: ReadonlySet<string>,
  edits: ReadonlyMap<string, string>,
  path: JsonPath = []
): unknown => {
  const here = JSON.stringify(path)
  if (typeof value === "string") return edits.get(here) ?? value
  if (Array.isArray(value)) {
    return value.flatMap((item, i) =>
      removed.has(JSON.stringify([...path, i])) ? [] : [applied(item, removed, edits, [...path, i])]
    )
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
          const edited = new Map(
            strings.length === 0
              ? []
              : editPicks.map(([n, t]) => [JSON.stringify(strings[n % strings.length]), t] as const)
          )
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
    const bytes = Buffer.from(
      `{ "seed" : 12345678901234567890, "tools": [ {"n":"a"} ,\n {"n":"b"}, {"n":"c"} ], "x": 1.0 }`
    )
    const middle = spliceEdits(bytes, [{ path: ["tools", 1], remove: true }])
    assert.strictEqual(
      Buffer.from(middle!).toString(),
      `{ "seed" : 12345678901234567890, "tools": [ {"n":"a"} ,\n {"n":"c"} ], "x": 1.0 }`
    )
    const last = spliceEdits(bytes, [{ path: ["tools", 2], remove: true }, { path: ["x"], remove: true }])
    assert.strictEqual(
      Buffer.from(last!).toString(),
      `{ "seed" : 12345678901234567890, "tools": [ {"n":"a"} ,\n {"n":"b"} ] }`
    )
    const all = spliceEdits(bytes, [0, 1, 2].map((i) => ({ path: ["tools", i], remove: true as const })))
    assert.strictEqual(Buffer.from(all!).toString(), `{ "seed" : 12345678901234567890, "tools": [  ], "x": 1.0 }`)
    const twice = Buffer.from(`{"tools":[{"n":"a"}],"tools":[{"n":"b"},{"n":"c"}]}`)
    assert.isUndefined(spliceEdits(twice, [{ path: ["tools", 0], remove: true }]))
    assert.isUndefined(spliceEdits(bytes, [{ path: ["absent"], remove: true }]))
  })

  it("any new text: the document reads as edited, and no byte outside the edited literals moves", () => {
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
          const literals = edits.map((e) => ({ literal: ranges.get(JSON.stringify(e.path))!, text: e.text }))
          assert.isTrue(keepsAllButLiterals(Buffer.from(out!), bytes, literals))
          const expected = edits.reduce<unknown>((acc, e) => setAt(acc, e.path, e.text), doc)
          assert.deepStrictEqual(JSON.parse(Buffer.from(out!).toString()), expected)
        }
      ),
      { numRuns: 400 }
    )
  })

  it("an edit with its changes rewrites only those characters: every other byte of the literal, escapes included, stays", () => {
    fc.assert(
      fc.property(
        jsonValue,
        fc.integer(),
        fc.array(fc.tuple(fc.nat(), fc.array(fc.tuple(fc.nat(), fc.nat(), text), { minLength: 1, maxLength: 4 })), {
          maxLength: 4
        }),
        (doc, seed, picks) => {
          const { bytes, ranges } = writeJson(doc, seed)
          const paths = stringPaths(doc)
          const chosen = new Map<string, { path: JsonPath; text: string; changes: Array<Change> }>()
          if (paths.length > 0) {
            for (const [n, cuts] of picks) {
              const path = paths[n % paths.length]!
              const literal = ranges.get(JSON.stringify(path))!
              const before = JSON.parse(bytes.subarray(literal.start, literal.end).toString()) as string
              const changes = changesFrom(before.length, cuts)
              chosen.set(JSON.stringify(path), { path, text: applyChanges(before, changes), changes })
            }
          }
          const edits = [...chosen.values()]
          const out = spliceStrings(bytes, edits)
          assert.isDefined(out)
          assert.strictEqual(Buffer.from(out!).toString(), expectedBytes(bytes, ranges, edits).toString())
          const expected = edits.reduce<unknown>((acc, e) => setAt(acc, e.path, e.text), doc)
          assert.deepStrictEqual(JSON.parse(Buffer.from(out!).toString()), expected)
        }
      ),
      { numRuns: 400 }
    )
  })

  it("an edit without its changes (a redaction's new text) rewrites only the matched spans, however the rest is escaped", () => {
    // Matches and the text between them, as a redaction leaves them: the text holds any character
    // (so any escape), with a space beside each match, as a pattern's word boundary would want.
    const match = fc.constantFrom("123-45-6789", "987-65-4321", "000-00-0000")
    const gap = text.map((t) => ` ${t} `)
    const redactable = fc.tuple(
      fc.option(text, { nil: undefined }),
      fc.array(fc.tuple(match, gap), { minLength: 1, maxLength: 4 })
    )
    fc.assert(
      fc.property(
        jsonValue,
        fc.array(redactable, { minLength: 1, maxLength: 3 }),
        fc.integer(),
        (noise, strings, seed) => {
          const values = strings.map(([head, pieces]) => {
            let before = head ?? ""
            const changes: Array<Change> = []
            for (const [m, g] of pieces) {
              changes.push({ start: before.length, end: before.length + m.length, text: "[REDACTED]" })
              before += m + g
            }
            return { before, changes }
          })
          const doc = { noise, texts: values.map((v) => v.before) }
          const { bytes, ranges } = writeJson(doc, seed)
          const edits = values.map((v, i) => ({
            path: ["texts", i] as JsonPath,
            text: applyChanges(v.before, v.changes),
            changes: v.changes
          }))
          const out = spliceStrings(bytes, edits.map(({ path, text }) => ({ path, text })))
          assert.isDefined(out)
          assert.strictEqual(Buffer.from(out!).toString(), expectedBytes(bytes, ranges, edits).toString())
        }
      ),
      { numRuns: 400 }
    )
  })

  it("the reported request: only the number is rewritten; the other escapes of its string stay as sent", () => {
    const body = Buffer.from(
      String
        .raw`{"model":"m","messages":[{"role":"user","content":"my ssn 123-45-6789 caf\u00e9 a\/b \ud83d\ude00 end"}]}`
    )
    const out = spliceStrings(body, [{ path: ["messages", 0, "content"], text: "my ssn [REDACTED] café a/b 😀 end" }])
    assert.strictEqual(
      Buffer.from(out!).toString(),
      String
        .raw`{"model":"m","messages":[{"role":"user","content":"my ssn [REDACTED] caf\u00e9 a\/b \ud83d\ude00 end"}]}`
    )
  })

  it("each escape kind, several matches, and a change inside a surrogate pair", () => {
    const splice = (literal: string, text: string, changes?: ReadonlyArray<Change>) =>
      Buffer.from(spliceStrings(Buffer.from(`[${literal}]`), [{ path: [0], text, ...(changes ? { changes } : {}) }])!)
        .toString().slice(1, -1)
    const raw = String.raw
    // Three matches with escapes of every kind around and between them, and a one-character gap.
    assert.strictEqual(
      splice(
        raw`"\"a\" \\ 123-45-6789\n\t\b\f\r\/\u0041 \u00e9 123-45-6789\/000-00-0000 \ud83d\ude00"`,
        "\"a\" \\ [REDACTED]\n\t\b\f\r/A é [REDACTED]/[REDACTED] 😀"
      ),
      raw`"\"a\" \\ [REDACTED]\n\t\b\f\r\/\u0041 \u00e9 [REDACTED]\/[REDACTED] \ud83d\ude00"`
    )
    // A match between lone surrogates (an escaped pair cut in two by the match).
    assert.strictEqual(splice(raw`"\ud83d123-45-6789\ude00"`, "\ud83d[REDACTED]\ude00"), raw`"\ud83d[REDACTED]\ude00"`)
    // Escaped characters inside the match go with it.
    assert.strictEqual(splice(raw`"x \u0031\u00323-45-678\u0039 y"`, "x [REDACTED] y"), raw`"x [REDACTED] y"`)
    // A change that starts or ends inside a raw pair takes the pair, and writes the half it keeps.
    assert.strictEqual(splice(`"a😀b"`, "a\ud83dZb", [{ start: 2, end: 3, text: "Z" }]), raw`"a\ud83dZb"`)
    assert.strictEqual(splice(`"a😀b"`, "aZ\ude00b", [{ start: 1, end: 2, text: "Z" }]), raw`"aZ\ude00b"`)
    assert.strictEqual(
      splice(raw`"a😀b\u00e9"`, "a\ud83d!\ude00bé", [{ start: 2, end: 2, text: "!" }]),
      raw`"a\ud83d!\ude00b\u00e9"`
    )
    // Written as two escapes, each half is its own token.
    assert.strictEqual(splice(raw`"a\ud83d\ude00b"`, "a\ud83dZb", [{ start: 2, end: 3, text: "Z" }]), raw`"a\ud83dZb"`)
    // Removed text (a sealed block) takes nothing else with it.
    assert.strictEqual(
      splice(raw`"caf\u00e9 <plan nonce=\"x\">p</plan> a\/b <goal nonce=\"y\">g</goal>\u0021"`, "café  a/b !"),
      raw`"caf\u00e9  a\/b \u0021"`
    )
  })

  it("a duplicate key is edited where JSON.parse read it (the last occurrence)", () => {
    const bytes = Buffer.from(`{"a":"first","a":"second","b":["x"]}`)
    const out = spliceStrings(bytes, [{ path: ["a"], text: "edited" }])
    assert.strictEqual(Buffer.from(out!).toString(), `{"a":"first","a":"edited","b":["x"]}`)
    assert.isUndefined(spliceStrings(bytes, [{ path: ["b", 3], text: "nowhere" }]))
  })

  it.effect("redactions by several rules through the engine rewrite exactly the matched characters (touching, overlapping, one character apart)", () =>
    Effect.gen(function*() {
      const guardrails = yield* makeGuardrails({
        store: memoryGuardrailStore(),
        ttl: Duration.minutes(1),
        failOpen: false
      }).pipe(Effect.provide(Invalidation.layerMemory))
      const org = "7a1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
      // The second rule runs on the first's output: `]+7` can take the last character of a [REDACTED].
      const patterns = ["\\d{3}-\\d{2}-\\d{4}", "KEY\\d+|\\]\\+\\d+"]
      for (const [i, pattern] of patterns.entries()) {
        yield* guardrails.create(org, { name: `rule${i}`, rule_type: "pii_redact", pattern, priority: i })
      }
      const content = fc.array(
        fc.oneof(text, fc.constantFrom("123-45-6789", "KEY4", "+7", "[", "R", "E", "D", "A", "C", "T", "]")),
        { maxLength: 8 }
      )
        .map((parts) => parts.join(""))
      const chatDoc = fc.record({
        model: fc.constant("gpt"),
        messages: fc.array(fc.record({ role: fc.constantFrom("system", "user"), content }), {
          minLength: 1,
          maxLength: 4
        })
      })
      for (const [doc, seed] of fc.sample(fc.tuple(chatDoc, fc.integer()), { numRuns: 300, seed: 7 })) {
        const { bytes, ranges } = writeJson(doc, seed)
        const outcome = yield* guardrails.evaluate(org, "chat", bytes, JSON.parse(bytes.toString()))
        const edits = doc.messages.flatMap((m, i) => {
          const changes = redactedSpans(m.content, patterns.map((p) => new RegExp(p, "gu")))
          return changes.length === 0
            ? []
            : [{ path: ["messages", i, "content"] as JsonPath, text: applyChanges(m.content, changes), changes }]
        })
        if (edits.length === 0) {
          assert.isUndefined(outcome.body)
          continue
        }
        assert.strictEqual(Buffer.from(outcome.body!).toString(), expectedBytes(bytes, ranges, edits).toString())
      }
    }))

  it.effect("a redaction through the engine rewrites only the matched characters (chat, random spelling)", () =>
    Effect.gen(function*() {
      const guardrails = yield* makeGuardrails({
        store: memoryGuardrailStore(),
        ttl: Duration.minutes(1),
        failOpen: false
      }).pipe(Effect.provide(Invalidation.layerMemory))
      const org = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
      yield* guardrails.create(org, { name: "ssn", rule_type: "pii_redact", pattern: "\\d{3}-\\d{2}-\\d{4}" })
      const ssn = /\d{3}-\d{2}-\d{4}/gu
      const content = fc.array(fc.oneof(text, fc.constant("123-45-6789")), { maxLength: 4 }).map((parts) =>
        parts.join(" ")
      )
      const chatDoc = fc.record({
        model: fc.constant("gpt"),
        messages: fc.array(
          fc.oneof(
            fc.record({ role: fc.constantFrom("system", "user", "tool"), content }),
            fc.record({
              role: fc.constant("assistant"),
              content: fc.constant(null),
              tool_calls: fc.constant([{
                id: "c",
                type: "function",
                function: { name: "f", arguments: "{\"ssn\":\"123-45-6789\"}" }
              }])
            })
          ),
          { minLength: 1, maxLength: 5 }
        )
      })
      const samples = fc.sample(fc.tuple(chatDoc, fc.integer()), { numRuns: 200, seed: 42 })
      for (const [doc, seed] of samples) {
        const { bytes, ranges } = writeJson(doc, seed)
        const outcome = yield* guardrails.evaluate(org, "chat", bytes, JSON.parse(bytes.toString()))
        const edits = doc.messages.flatMap((m, i) => {
          if (typeof m.content !== "string") return []
          const changes = [...m.content.toWellFormed().matchAll(ssn)]
            .map((found) => ({ start: found.index, end: found.index + found[0].length, text: "[REDACTED]" }))
          return changes.length === 0
            ? []
            : [{ path: ["messages", i, "content"] as JsonPath, text: applyChanges(m.content, changes), changes }]
        })
        if (edits.length === 0) {
          assert.isUndefined(outcome.body)
          continue
        }
        assert.strictEqual(outcome.decision, "redact")
        assert.strictEqual(Buffer.from(outcome.body!).toString(), expectedBytes(bytes, ranges, edits).toString())
        const expected = edits.reduce<unknown>((acc, e) => setAt(acc, e.path, e.text), doc)
        assert.deepStrictEqual(JSON.parse(Buffer.from(outcome.body!).toString()), expected)
      }
    }))
})
