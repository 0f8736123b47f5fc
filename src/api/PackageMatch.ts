import { Result } from "effect"
import { BadRequest } from "../../schema/ErrorBody.ts"
import { versionOrder } from "../versions/VersionOrder.ts"
import { isAffected } from "../vulns/AffectedVersion.ts"
import type { IndexedEntry, PackageRecord } from "../vulns/PackageIndex.ts"
import type { PackageTarget } from "./PackageTarget.ts"

/**
 * Which records of a package a query matches: every record naming the package
 * without a version, else those whose entries affect the version
 * (`AffectedVersion.ts`). A query naming a release (`Debian:12`) reads only
 * that release's entries. A version in an ecosystem without a known order is
 * refused (400); a version the order cannot read still matches enumerated
 * versions, as OSV's own evaluation does. The version is parsed once here, not
 * once a record.
 */
export const recordMatcher = (target: PackageTarget): Result.Result<(record: PackageRecord) => boolean, BadRequest> => {
  const release = target.release?.toLowerCase()
  const inRelease = (e: IndexedEntry) => release === undefined || e.ecosystem.toLowerCase() === release
  const version = target.version
  if (version === undefined) return Result.succeed((r) => r.entries.some(inRelease))
  const order = versionOrder(target.base)
  if (Result.isFailure(order)) return Result.fail(new BadRequest({ message: order.failure.message }))
  const parsed = order.success.parse(version)
  const at = Result.isSuccess(parsed) ? parsed.success : undefined
  return Result.succeed((r) => r.entries.some((e) => inRelease(e) && isAffected(e, version, order.success, at)))
}

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

/** One page of `items` from `offset`, and the next page's token when there is one. */
export const pageOf = <A>(items: ReadonlyArray<A>, offset: number, size: number) => {
  const page = items.slice(offset, offset + size)
  const next = offset + size < items.length ? pageToken(offset + size) : undefined
  return { page, next }
}
