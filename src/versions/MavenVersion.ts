import { Result } from "effect"
import { compareDigits, compareText, sign, type VersionScheme } from "./VersionScheme.ts"

/**
 * Maven's `org.apache.maven.artifact.versioning.ComparableVersion` (maven-artifact 3.8.7;
 * https://maven.apache.org/pom.html#version-order-specification). A version is a tree:
 * `.` separates items of one list, `-` and every switch between digits and letters open a
 * sub-list. Items are numbers, qualifiers, or sub-lists.
 */
type Item =
  | { readonly kind: "number"; readonly digits: string }
  | { readonly kind: "qualifier"; readonly value: string }
  | { readonly kind: "list"; readonly items: Array<Item> }

/** Known qualifiers in order; the empty qualifier (a release: `ga`, `final`, `release`) sits before `sp`. */
const QUALIFIERS = ["alpha", "beta", "milestone", "rc", "snapshot", "", "sp"]
const ALIASES: Readonly<Record<string, string>> = { ga: "", final: "", release: "", cr: "rc" }
const RELEASE = String(QUALIFIERS.indexOf(""))

/** Unknown qualifiers sort after the known ones, among themselves as text (`"7-" + value`). */
const qualifierKey = (value: string) => {
  const i = QUALIFIERS.indexOf(value)
  return i >= 0 ? String(i) : `${QUALIFIERS.length}-${value}`
}

const qualifier = (text: string, followedByDigit: boolean): Item => {
  // `a1`, `b2`, `m3` are alpha-1, beta-2, milestone-3; a lone `a` is an unknown qualifier.
  const short = followedByDigit && text.length === 1 ? { a: "alpha", b: "beta", m: "milestone" }[text] : undefined
  const value = short ?? text
  return { kind: "qualifier", value: ALIASES[value] ?? value }
}

const item = (text: string, isDigit: boolean, followedByDigit = false): Item =>
  isDigit ? { kind: "number", digits: text.replace(/^0+(?=.)/, "") } : qualifier(text, followedByDigit)

const isNull = (i: Item) =>
  i.kind === "number" ? /^0+$/.test(i.digits) : i.kind === "qualifier" ? i.value === "" : i.items.length === 0

/**
 * `ListItem.normalize`: trailing null items (0, release qualifiers, empty lists) are dropped,
 * up to the last non-list. One departure: a sub-list whose only items before its own sub-list
 * were release qualifiers (`ga`, `final`, `release`) is that sub-list, as the specification's
 * "repeated at each remaining hyphen" reads and OSV's vectors say: `1-ga-1 = 1-1`
 * (maven-artifact 3.8.7 ranks `1-ga-1` lower). The root is the version itself and never merges.
 */
const normalize = (list: Array<Item>, isRoot: boolean) => {
  let onlyReleaseQualifiersRemoved = true
  for (let i = list.length - 1; i >= 0; i--) {
    const last = list[i]!
    if (isNull(last)) {
      onlyReleaseQualifiersRemoved &&= last.kind === "qualifier"
      list.splice(i, 1)
    } else if (last.kind !== "list") break
  }
  const only = list[0]
  if (!isRoot && onlyReleaseQualifiersRemoved && list.length === 1 && only?.kind === "list") {
    list.splice(0, 1, ...only.items)
  }
}

const parse = (version: string): Array<Item> => {
  const text = version.toLowerCase()
  const root: Array<Item> = []
  let list = root
  const stack: Array<Array<Item>> = [root]
  const openList = () => {
    const next: Array<Item> = []
    list.push({ kind: "list", items: next })
    list = next
    stack.push(next)
  }
  let isDigit = false
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === "." || c === "-") {
      list.push(i === start ? { kind: "number", digits: "0" } : item(text.slice(start, i), isDigit))
      start = i + 1
      if (c === "-") openList()
    } else if (c >= "0" && c <= "9") {
      if (!isDigit && i > start) {
        // A qualifier after other items of its list starts a sub-list (`1.0.0.X1 < 1.0.0-X2`).
        if (list.length > 0) openList()
        list.push(qualifier(text.slice(start, i), true))
        start = i
        openList()
      }
      isDigit = true
    } else {
      if (isDigit && i > start) {
        list.push(item(text.slice(start, i), true))
        start = i
        openList()
      }
      isDigit = false
    }
  }
  if (text.length > start) {
    // So does a trailing one: `1.foo = 1-foo`.
    if (!isDigit && list.length > 0) openList()
    list.push(item(text.slice(start), isDigit))
  }
  for (let i = stack.length - 1; i >= 0; i--) normalize(stack[i]!, i === 0)
  return root
}

/** `Item.compareTo`; `undefined` is the padding a shorter list is compared with. */
const compareItem = (a: Item, b: Item | undefined): number => {
  if (b === undefined) {
    if (a.kind === "number") return isNull(a) ? 0 : 1
    if (a.kind === "qualifier") return compareText(qualifierKey(a.value), RELEASE)
    for (const inner of a.items) {
      const c = compareItem(inner, undefined)
      if (c !== 0) return c
    }
    return 0
  }
  switch (a.kind) {
    case "number":
      // 1.1 > 1-sp (a qualifier) and 1.1 > 1-1 (a sub-list)
      return b.kind === "number" ? compareDigits(a.digits, b.digits) : 1
    case "qualifier":
      return b.kind === "qualifier" ? compareText(qualifierKey(a.value), qualifierKey(b.value)) : -1
    case "list":
      return b.kind === "number" ? -1 : b.kind === "qualifier" ? 1 : compareLists(a.items, b.items)
  }
}

const compareLists = (a: ReadonlyArray<Item>, b: ReadonlyArray<Item>): number => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const l = a[i]
    const r = b[i]
    const c = l === undefined ? (r === undefined ? 0 : -compareItem(r, undefined)) : compareItem(l, r)
    if (c !== 0) return c
  }
  return 0
}

/**
 * Maven order: numbers numerically; `alpha < beta < milestone < rc = cr < snapshot < "" = ga =
 * final = release < sp`, then unknown qualifiers alphabetically; case-insensitive; trailing
 * zeros and release qualifiers do not count (`1 = 1.0 = 1-ga`); after `-` a number is a
 * sub-version (`1.0 < 1.0-1 < 1.0.1`). Every text is a Maven version.
 */
export const MavenVersion: VersionScheme<Array<Item>> = {
  rules: "Maven ComparableVersion",
  parse: (text) => (text.trim() === "" ? Result.fail("is empty") : Result.succeed(parse(text.trim()))),
  compare: (a, b) => sign(compareLists(a, b))
}
