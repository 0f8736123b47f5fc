import { Result } from "effect"
import { type ParsedVersion, type VersionOrder, versionOrder } from "../versions/VersionOrder.ts"
import { type Bound, compile, ZERO } from "./AffectedVersion.ts"
import type { IndexedEntry, PackageRecord } from "./PackageIndex.ts"

/**
 * A package's records as answers to "which of them affect version V", built
 * once per package (and release) and then answered by a binary search.
 *
 * Every SEMVER/ECOSYSTEM bound of every record is a breakpoint on the
 * package's version line; bound j sits at position 2j + 1, the versions
 * strictly between bounds j - 1 and j at 2j, `introduced: "0"` below all at
 * -1. Whether a version is in a range depends only on how it compares with
 * the range's bounds, so every version at one position gets the same answer:
 * the range walk of `AffectedVersion.inRange` runs on positions, once a
 * position, and its result is kept. Enumerated versions match by their text,
 * so a listed text is answered (and kept) on its own. What is kept lives with
 * the package's cache entry and is dropped with it, here and in every other
 * process, when the package or any of its records changes.
 */

/** The records one question matches: positions in the package's records, ascending (so in identifier order). */
export interface Matched {
  readonly positions: Int32Array
}

const NONE: Matched = { positions: new Int32Array(0) }
const BELOW_ALL = -1
const INTRODUCED = 0
const FIXED = 1
const LAST_AFFECTED = 2
const KINDS: Readonly<Record<Bound["kind"], number>> = {
  introduced: INTRODUCED,
  fixed: FIXED,
  last_affected: LAST_AFFECTED,
  limit: -1
}

/** A range's bounds, in `compile`'s order, as positions on the package's line. */
interface PlacedRange {
  readonly limits: ReadonlyArray<number>
  readonly kinds: ReadonlyArray<number>
  readonly at: ReadonlyArray<number>
}

/** `inRange` with a position `s` for the version: comparing with a bound is comparing positions. */
const covers = (range: PlacedRange, s: number): boolean => {
  if (range.limits.length > 0 && !range.limits.some((p) => s < p)) return false
  let affected = false
  for (let i = 0; i < range.at.length; i++) {
    const c = s - range.at[i]!
    const kind = range.kinds[i]
    if (kind === INTRODUCED) {
      if (c >= 0) affected = true
    } else if (kind === FIXED) {
      if (c >= 0) affected = false
    } else if (c > 0) affected = false
  }
  return affected
}

/** Kept answers beyond this many bytes a package are computed per question instead (a package of thousands of records). */
const KEPT_BYTES_MAX = 8 * 1024 * 1024
const MATCHED_OVERHEAD = 64

/** One package's records for one release (or all of them): its line, ranges and kept answers. */
class ReleaseLine {
  private readonly line: ReadonlyArray<ParsedVersion>
  private readonly ranges: ReadonlyArray<ReadonlyArray<PlacedRange>>
  private readonly listed = new Map<string, Array<number>>()
  private readonly atPosition = new Map<number, Matched>()
  private readonly atText = new Map<string, Matched>()
  private readonly order: VersionOrder | undefined
  private readonly grow: (bytes: number) => boolean
  readonly all: Matched

  constructor(
    records: ReadonlyArray<PackageRecord>,
    order: VersionOrder | undefined,
    release: string | undefined,
    grow: (bytes: number) => boolean
  ) {
    this.order = order
    this.grow = grow
    const included = (e: IndexedEntry) => release === undefined || e.ecosystem.toLowerCase() === release
    const present: Array<number> = []
    const compiled = records.map(() => [] as Array<{ limits: ReadonlyArray<Bound>; sorted: ReadonlyArray<Bound> }>)
    const points: Array<ParsedVersion> = []
    records.forEach((record, n) => {
      let named = false
      for (const entry of record.entries) {
        if (!included(entry)) continue
        named = true
        for (const version of entry.versions) {
          let list = this.listed.get(version)
          if (list === undefined) this.listed.set(version, list = [])
          if (list[list.length - 1] !== n) list.push(n)
        }
        if (order === undefined) continue
        for (const range of entry.ranges) {
          if (range.type === "GIT") continue
          const c = compile(order, range)
          compiled[n]!.push(c)
          for (const b of [...c.limits, ...c.sorted]) if (b.at !== ZERO) points.push(b.at)
        }
      }
      if (named) present.push(n)
    })
    this.all = { positions: Int32Array.from(present) }
    const line: Array<ParsedVersion> = []
    if (order !== undefined) {
      points.sort(order.compareParsed)
      for (const p of points) {
        if (line.length === 0 || order.compareParsed(line[line.length - 1]!, p) !== 0) line.push(p)
      }
    }
    this.line = line
    const place = (b: Bound) => b.at === ZERO ? BELOW_ALL : this.position(b.at)
    this.ranges = compiled.map((cs) =>
      cs.map((c): PlacedRange => ({
        limits: c.limits.map(place),
        kinds: c.sorted.map((b) => KINDS[b.kind]),
        at: c.sorted.map(place)
      }))
    )
  }

  /** The position of a parsed version: 2j + 1 on bound j, else 2j with j the first bound above it. */
  private position(version: ParsedVersion): number {
    const order = this.order!
    let lo = 0
    let hi = this.line.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (order.compareParsed(this.line[mid]!, version) < 0) lo = mid + 1
      else hi = mid
    }
    return lo < this.line.length && order.compareParsed(this.line[lo]!, version) === 0 ? 2 * lo + 1 : 2 * lo
  }

  /** Records with a range covering position `s`, or listing the text (`listed`, ascending). */
  private evaluate(s: number | undefined, listed: ReadonlyArray<number>): Matched {
    const out: Array<number> = []
    let l = 0
    for (let n = 0; n < this.ranges.length; n++) {
      const isListed = l < listed.length && listed[l] === n
      if (isListed) l++
      if (isListed || (s !== undefined && this.ranges[n]!.some((r) => covers(r, s)))) out.push(n)
    }
    return out.length === 0 ? NONE : { positions: Int32Array.from(out) }
  }

  private keep<K>(memo: Map<K, Matched>, key: K, matched: Matched): Matched {
    if (this.grow(matched.positions.byteLength + MATCHED_OVERHEAD)) memo.set(key, matched)
    return matched
  }

  /** A text asked before is a map lookup: no parse, no search (the answer is the one its position keeps). */
  matched(version: string): Matched {
    const byText = this.atText.get(version)
    if (byText !== undefined) return byText
    const listed = this.listed.get(version)
    const parsed = this.order?.parse(version)
    const s = parsed !== undefined && Result.isSuccess(parsed) ? this.position(parsed.success) : undefined
    if (listed !== undefined) return this.keep(this.atText, version, this.evaluate(s, listed))
    const matched = s === undefined
      ? NONE
      : this.atPosition.get(s) ?? this.keep(this.atPosition, s, this.evaluate(s, []))
    if (this.grow(2 * version.length + MATCHED_OVERHEAD)) this.atText.set(version, matched)
    return matched
  }
}

/**
 * One package's records (every record naming it, in identifier order) and
 * what questions about them have answered. `kept` counts the bytes kept since
 * the last `takeGrowth`, for the response cache's accounting.
 */
export class PackageSegments {
  private readonly order: VersionOrder | undefined
  private readonly lines = new Map<string, ReleaseLine>()
  private keptBytes = 0
  private growth = 0
  readonly records: ReadonlyArray<PackageRecord>

  constructor(base: string, records: ReadonlyArray<PackageRecord>) {
    this.records = records
    const order = versionOrder(base)
    this.order = Result.isSuccess(order) ? order.success : undefined
  }

  /** Whether `bytes` more may be kept with the package (counted if so). */
  readonly keep = (bytes: number) => {
    if (this.keptBytes + bytes > KEPT_BYTES_MAX) return false
    this.keptBytes += bytes
    this.growth += bytes
    return true
  }

  /**
   * The records a query matches: with no version every record with an entry
   * of the release (all entries without one); else those an entry of the
   * release affects (`AffectedVersion.isAffected`). `release` is lower case.
   */
  matched(release: string | undefined, version: string | undefined): Matched {
    const key = release ?? ""
    let line = this.lines.get(key)
    if (line === undefined) {
      this.lines.set(key, line = new ReleaseLine(this.records, this.order, release, this.keep))
      this.keep(this.records.length * 16)
    }
    return version === undefined ? line.all : line.matched(version)
  }

  /** Bytes kept since the last call. */
  takeGrowth(): number {
    const bytes = this.growth
    this.growth = 0
    return bytes
  }
}
