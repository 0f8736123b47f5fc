import { Schema } from "effect"
import { brotliCompressSync, constants, gzipSync } from "node:zlib"
import { CveSummary } from "../../schema/CveSummary.ts"
import { ExploitResponse } from "../../schema/ExploitResponse.ts"
import { type Coding, MIN_COMPRESS_BYTES } from "../http/Compression.ts"
import type { SummaryBody } from "../vulns/Summary.ts"
import type { Lookup } from "../vulns/VulnStoreShapes.ts"
import { weakEtag } from "./Conditional.ts"
import type { Built } from "./ResponseCache.ts"

/**
 * The answers the response cache keeps, as bytes (or text) ready to send.
 * `/info` and `/exploits` end with a per-response time (and `/info` with
 * `cache_hit`): the cached part is the JSON up to that member, which is
 * appended per request; the entity tag covers the cached part only.
 */

/** `/vuln`: the identity body, and its compressed variants once a client asked for them. */
export interface VulnAnswer {
  readonly etag: string
  readonly identity: Uint8Array
  gzip?: Uint8Array
  br?: Uint8Array
}

/** `/info` and `/exploits`: the JSON object without its closing brace and last member(s). */
export interface OpenAnswer {
  readonly etag: string
  readonly head: string
}

const encoder = new TextEncoder()

/** Every identifier an answer is built from: what invalidates it. */
export const dependenciesOf = (identifier: string, lookup: Lookup): ReadonlyArray<string> => [
  identifier,
  ...lookup.aliases,
  ...lookup.records.map((r) => r.identifier)
]

/** `[` + the stored CVE 5.1 texts + `]`: what encoding through `VulnRecords` would give, without the walk. */
export const vulnAnswer = (identifier: string, lookup: Lookup): Built<VulnAnswer> => {
  const parts = lookup.records.flatMap((r) => r.recordJson === null ? [] : [r.recordJson])
  const identity = encoder.encode(`[${parts.join(",")}]`)
  return {
    value: { etag: weakEtag(identity), identity },
    bytes: identity.byteLength,
    dependsOn: dependenciesOf(identifier, lookup)
  }
}

// Quality 5, paid once per entry (per ingest that touches it). At the relay's quality 4 brotli was
// bigger than gzip on half the fixture's records (in all, 170,010 against 169,992 bytes for 99 records),
// so a client preferring br got more bytes; 5 is 6 % under gzip on every one of them, for 0.3 ms on a
// 32 KB answer against 0.17 at 4 (docs/api.md, "Compression"). 9 and up take tens of milliseconds.
export const CACHED_BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }

/** Whether `/vuln`'s body is worth compressing at all. */
export const compressible = (answer: VulnAnswer) => answer.identity.byteLength >= MIN_COMPRESS_BYTES

/**
 * The body in `coding`, compressed on first use and kept on the answer (so
 * once per entry, i.e. once per ingest that touches it). Returns the bytes
 * added to the answer (0 when already there) for the cache's accounting.
 */
export const encoded = (answer: VulnAnswer, coding: Coding): { readonly body: Uint8Array; readonly added: number } => {
  const kept = answer[coding]
  if (kept !== undefined) return { body: kept, added: 0 }
  const body = coding === "br" ? brotliCompressSync(answer.identity, CACHED_BROTLI) : gzipSync(answer.identity)
  answer[coding] = body
  return { body, added: body.byteLength }
}

const encodeSummary = Schema.encodeSync(CveSummary)
const encodeExploits = Schema.encodeSync(ExploitResponse)

/** Removes the per-response members from an encoded object and leaves it open for them. */
const openJson = (encoded: object, perResponse: ReadonlyArray<string>): string => {
  const stable: Record<string, unknown> = { ...encoded }
  for (const key of perResponse) delete stable[key]
  const text = JSON.stringify(stable)
  return text.slice(0, -1)
}

const openAnswer = (head: string, dependsOn: ReadonlyArray<string>): Built<OpenAnswer> => ({
  value: { etag: weakEtag(head), head },
  bytes: head.length * 2,
  dependsOn
})

/** `/info` without `_timestamp` and `cache_hit`. */
export const infoAnswer = (body: SummaryBody, dependsOn: ReadonlyArray<string>): Built<OpenAnswer> =>
  openAnswer(
    openJson(encodeSummary({ ...body, _timestamp: 0, cache_hit: false }), ["_timestamp", "cache_hit"]),
    dependsOn
  )

/** The `/info` text of one response. */
export const infoText = (answer: OpenAnswer, nowSeconds: number, hit: boolean) =>
  `${answer.head},"_timestamp":${nowSeconds},"cache_hit":${hit}}`

/** `/exploits` without `timestamp`. */
export const exploitsAnswer = (
  response: Omit<ExploitResponse, "timestamp">,
  dependsOn: ReadonlyArray<string>
): Built<OpenAnswer> => openAnswer(openJson(encodeExploits({ ...response, timestamp: 0 }), ["timestamp"]), dependsOn)

/** The `/exploits` text of one response. */
export const exploitsText = (answer: OpenAnswer, nowSeconds: number) => `${answer.head},"timestamp":${nowSeconds}}`
