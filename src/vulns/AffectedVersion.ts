import { Result } from "effect"
import type { ParsedVersion, VersionOrder } from "../versions/VersionOrder.ts"
import type { AffectedRange, RangeEvent } from "./OsvForm.ts"

/**
 * Whether a version is affected by one `affected` entry, as the OSV schema
 * evaluates it (https://ossf.github.io/osv-schema/#evaluation):
 * - listed in `versions` (exact text) — the only way a `GIT` range matches;
 * - or inside a `SEMVER` or `ECOSYSTEM` range: walking the events in version
 *   order, the last `introduced` at or below it is not closed by a `fixed` at
 *   or below it or a `last_affected` below it, and it is below some `limit`
 *   when the range has any.
 * A range bound the ecosystem's order cannot parse is skipped (with a
 * warning-free miss): it can neither open nor close anything.
 */
export interface AffectedEntry {
  readonly ranges: ReadonlyArray<AffectedRange>
  readonly versions: ReadonlyArray<string>
}

export const ZERO = "0"

export interface Bound {
  readonly kind: "introduced" | "fixed" | "last_affected" | "limit"
  readonly at: ParsedVersion | typeof ZERO
}

const boundOf = (order: VersionOrder, event: RangeEvent): Bound | undefined => {
  const [kind, text] = Object.entries(event)[0] as [Bound["kind"], string]
  // `introduced: "0"` is below every version, whatever the ecosystem's order makes of "0".
  if (kind === "introduced" && text === ZERO) return { kind, at: ZERO }
  const parsed = order.parse(text)
  return Result.isSuccess(parsed) ? { kind, at: parsed.success } : undefined
}

const compare = (order: VersionOrder, a: ParsedVersion | typeof ZERO, b: ParsedVersion | typeof ZERO) =>
  a === ZERO ? (b === ZERO ? 0 : -1) : b === ZERO ? 1 : order.compareParsed(a, b)

export interface Compiled {
  readonly limits: ReadonlyArray<Bound>
  readonly sorted: ReadonlyArray<Bound>
}

/**
 * Ranges parsed and sorted once per range object: the package answers the
 * response cache keeps hold the same objects, so a hot package's bounds are
 * parsed once, not on every query (a batch asks about one package many times).
 */
const compiled = new WeakMap<AffectedRange, Compiled>()

export const compile = (order: VersionOrder, range: AffectedRange): Compiled => {
  const known = compiled.get(range)
  if (known !== undefined) return known
  const bounds = range.events.flatMap((e) => boundOf(order, e) ?? [])
  const made: Compiled = {
    limits: bounds.filter((b) => b.kind === "limit"),
    // Events in version order; at one version an `introduced` comes before what closes it.
    sorted: bounds.filter((b) => b.kind !== "limit").sort((a, b) =>
      compare(order, a.at, b.at) || (a.kind === "introduced" ? -1 : 0) - (b.kind === "introduced" ? -1 : 0)
    )
  }
  compiled.set(range, made)
  return made
}

const listed = new WeakMap<ReadonlyArray<string>, ReadonlySet<string>>()
const listedSet = (versions: ReadonlyArray<string>) => {
  let set = listed.get(versions)
  if (set === undefined) listed.set(versions, set = new Set(versions))
  return set
}

/** Whether `version` lies in one SEMVER/ECOSYSTEM range. */
export const inRange = (order: VersionOrder, range: AffectedRange, version: ParsedVersion): boolean => {
  const { limits, sorted } = compile(order, range)
  if (limits.length > 0 && !limits.some((l) => compare(order, version, l.at) < 0)) return false
  let affected = false
  for (const bound of sorted) {
    const c = compare(order, version, bound.at)
    if (bound.kind === "introduced") {
      if (c >= 0) affected = true
    } else if (bound.kind === "fixed") {
      if (c >= 0) affected = false
    } else if (c > 0) affected = false
  }
  return affected
}

/**
 * Whether `version` (its text, and its parse when the ecosystem's order can
 * read it) is affected by `entry`.
 */
export const isAffected = (
  entry: AffectedEntry,
  version: string,
  order: VersionOrder | undefined,
  parsed: ParsedVersion | undefined
): boolean => {
  if (
    entry.versions.length > 0 &&
    (entry.versions.length < 8 ? entry.versions.includes(version) : listedSet(entry.versions).has(version))
  ) return true
  if (order === undefined || parsed === undefined) return false
  return entry.ranges.some((r) => r.type !== "GIT" && inRange(order, r, parsed))
}
