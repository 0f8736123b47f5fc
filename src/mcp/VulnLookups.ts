import { Effect } from "effect"
import { identifierProblem, normaliseIdentifier } from "../vulns/Identifier.ts"
import type { ExploitRecord } from "../vulns/Normalised.ts"
import { VulnStore } from "../vulns/VulnStore.ts"
import type { Lookup } from "../vulns/VulnStoreShapes.ts"
import type { McpCaller } from "./McpCaller.ts"
import { cvssOf } from "./RecordFacts.ts"
import type { ToolName, ToolParams } from "./ToolDefinitions.ts"
import { fail, type ToolFailure, type ToolResult } from "./ToolKit.ts"

/** A tool's handler: its arguments as its schema (ToolDefinitions.ts) decodes them. */
export type ToolHandler<N extends ToolName = ToolName> = (
  params: ToolParams<N>
) => Effect.Effect<ToolResult, ToolFailure, McpCaller>
/** The handlers of the tools named `N`, each typed by its own arguments. */
export type ToolHandlers<N extends ToolName = ToolName> = { readonly [K in N]: ToolHandler<K> }

/** Every exploit of an identifier is read in one page of at most this many (the per-source tools filter it). */
export const EXPLOIT_SCAN = 1000

/**
 * What the vulnerability and exploit tools share: identifier checks with
 * agent-readable failures, lookups that fail on an unknown identifier, and
 * the exploit item shape.
 */
export const makeVulnLookups = Effect.gen(function*() {
  const store = yield* VulnStore

  const identify = (text: string) =>
    Effect.gen(function*() {
      const problem = identifierProblem(text)
      if (problem !== undefined) return yield* fail("invalid_argument", problem)
      const id = normaliseIdentifier(text)
      if (id === undefined) {
        return yield* fail(
          "invalid_argument",
          `malformed identifier ${
            JSON.stringify(text.slice(0, 100))
          }: use a form such as CVE-2024-3094 or GHSA-xxxx-xxxx-xxxx`
        )
      }
      return id
    })

  const unknown = (id: string) =>
    fail(
      "unknown_identifier",
      `${id} is not known to any data source; check the identifier, or try another alias form (CVE, GHSA, OSV, EUVD)`
    )

  /** The identifier's records (with bodies); fails when no source knows it. */
  const known = (identifier: string) =>
    Effect.gen(function*() {
      const id = yield* identify(identifier)
      const lookup = yield* store.lookup(id)
      if (lookup.records.length === 0) return yield* unknown(id)
      return { id, lookup }
    })

  const allExploits = (identifier: string) =>
    Effect.gen(function*() {
      const id = yield* identify(identifier)
      const page = yield* store.exploits(id, { limit: EXPLOIT_SCAN, offset: 0, includeContent: false })
      if (page.count === 0 && (yield* store.lookup(id, { bodies: false })).records.length === 0) {
        return yield* unknown(id)
      }
      return { id, page }
    })

  const exploitItem = (e: ExploitRecord) => ({
    uuid: e.uuid,
    source: e.source,
    type: e.type,
    title: e.title ?? null,
    url: e.url ?? null,
    createdAt: e.createdAt ?? null,
    details: e.details
  })

  const exploitLine = (e: ExploitRecord) =>
    `- [${e.source}/${e.type}] ${e.title ?? e.uuid}${e.url === undefined ? "" : ` ${e.url}`}`

  const cvssMax = (lookup: Lookup) => {
    const scores = cvssOf(lookup.records).flatMap((s) => s.baseScore === null ? [] : [s])
    return scores.length === 0 ? null : scores.reduce((a, b) => (b.baseScore! > a.baseScore! ? b : a))
  }

  return { store, identify, unknown, known, allExploits, exploitItem, exploitLine, cvssMax }
})
