import { compareText, sign } from "./VersionScheme.ts"

export interface LegacyParts {
  readonly kind: "legacy"
  readonly parts: ReadonlyArray<string>
}

/** setuptools' spelling replacements, as `packaging`'s `_legacy_version_replacement_map`. */
const REPLACEMENT: Readonly<Record<string, string>> = { pre: "c", preview: "c", "-": "final-", rc: "c", dev: "@" }

/**
 * `packaging` < 22's `LegacyVersion` key (`_legacy_cmpkey`), from setuptools'
 * `parse_version` of old: the lower-cased text is cut into digit runs, letter runs, `.` and
 * `-` (anything else between them is kept as its own part); numbers are zero-padded to 8
 * so that text order is numeric order, words are prefixed with `*`, and trailing zeros and
 * `final` markers before a word are dropped, so `1.0 == 1` and `1.0-final == 1.0`.
 * Keys compare as Python tuples of strings.
 */
const partsOf = (text: string): Array<string> => {
  const pieces = text.toLowerCase().split(/(\d+|[a-z]+|\.|-)/)
  const out: Array<string> = []
  for (const piece of pieces) {
    const part = REPLACEMENT[piece] ?? piece
    if (part === "" || part === ".") continue
    out.push(/^[0-9]/.test(part) ? part.padStart(8, "0") : `*${part}`)
  }
  out.push("*final")
  return out
}

export const LegacyPythonVersion = {
  parse: (text: string): LegacyParts => {
    const parts: Array<string> = []
    for (const part of partsOf(text)) {
      if (part.startsWith("*")) {
        if (part < "*final") {
          while (parts.length > 0 && parts[parts.length - 1] === "*final-") parts.pop()
        }
        while (parts.length > 0 && parts[parts.length - 1] === "00000000") parts.pop()
      }
      parts.push(part)
    }
    return { kind: "legacy", parts }
  },
  compare: (a: LegacyParts, b: LegacyParts): number => {
    for (let i = 0; i < Math.min(a.parts.length, b.parts.length); i++) {
      const c = compareText(a.parts[i]!, b.parts[i]!)
      if (c !== 0) return c
    }
    return sign(a.parts.length - b.parts.length)
  }
}
