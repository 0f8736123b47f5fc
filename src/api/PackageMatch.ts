import { Result } from "effect"
import { BadRequest } from "../../schema/ErrorBody.ts"
import { versionOrder } from "../versions/VersionOrder.ts"
import type { Matched, PackageSegments } from "../vulns/PackageSegments.ts"
import { BATCH_PAGE_SIZE } from "./OsvApi.ts"
import type { PackageTarget } from "./PackageTarget.ts"

/**
 * A version in an ecosystem without a known order is refused (400); a version
 * the order cannot read still matches enumerated versions, as OSV's own
 * evaluation does (`PackageSegments.ts`).
 */
export const versionCheck = (target: PackageTarget): Result.Result<PackageTarget, BadRequest> => {
  if (target.version === undefined) return Result.succeed(target)
  const order = versionOrder(target.base)
  return Result.isFailure(order)
    ? Result.fail(new BadRequest({ message: order.failure.message }))
    : Result.succeed(target)
}

/** The records of a package a query matches; a query naming a release (`Debian:12`) reads only its entries. */
export const matchedOf = (pkg: PackageSegments, target: PackageTarget): Matched =>
  pkg.matched(target.release?.toLowerCase(), target.version)

/** Page tokens: the offset of the page's first item, opaque to clients. */
const TOKEN = /^o([0-9]{1,9})$/

export const pageOffset = (token: string | undefined): Result.Result<number, BadRequest> => {
  if (token === undefined || token === "") return Result.succeed(0)
  const match = TOKEN.exec(token)
  return match === null
    ? Result.fail(new BadRequest({ message: "invalid page_token" }))
    : Result.succeed(Number(match[1]))
}

export const pageToken = (offset: number) => `o${offset}`

const encoder = new TextEncoder()
/** First pages as sent, kept with the package's answers (and dropped with them). */
const firstPages = new WeakMap<Matched, Uint8Array>()

/**
 * A querybatch result, `{"vulns":[{id, modified}…],"next_page_token"?}`, as
 * bytes: joined from each record's rendered brief, the first page once per
 * answer and then copied.
 */
export const batchResult = (pkg: PackageSegments, matched: Matched, offset: number): Uint8Array => {
  if (offset === 0) {
    const kept = firstPages.get(matched)
    if (kept !== undefined) return kept
  }
  const { positions } = matched
  const end = Math.min(positions.length, offset + BATCH_PAGE_SIZE)
  let text = `{"vulns":[`
  for (let i = offset; i < end; i++) {
    text += i === offset
      ? pkg.records[positions[i]!]!.brief
      : `,${pkg.records[positions[i]!]!.brief}`
  }
  text += positions.length > offset + BATCH_PAGE_SIZE
    ? `],"next_page_token":${JSON.stringify(pageToken(offset + BATCH_PAGE_SIZE))}}`
    : "]}"
  const bytes = encoder.encode(text)
  if (offset === 0 && pkg.keep(bytes.byteLength)) firstPages.set(matched, bytes)
  return bytes
}
