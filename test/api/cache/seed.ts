import { Effect } from "effect"
import { createHash } from "node:crypto"
import type { SourceName } from "../../../schema/Source.ts"
import { VulnStore } from "../../../src/vulns/VulnStore.ts"

const counts = { references: 1, problemTypes: 1, metrics: 1, affected: 1, impacts: 0, descriptions: 1, scorecards: 0 }

/** A CVE 5.1 record whose description is `size` characters (so its `/vuln` body is about that large). */
export const cveRecord = (id: string, source: string, size: number, revision = 1) => ({
  dataType: "CVE_RECORD",
  dataVersion: "5.1",
  cveMetadata: { cveId: id, assignerOrgId: "8254265b-2729-46b6-b9e3-3dfca2d5bfca", state: "PUBLISHED" },
  containers: {
    cna: {
      title: `${id} from ${source}, revision ${revision}`,
      descriptions: [{ lang: "en", value: "x".repeat(size) }]
    },
    adp: [{ x_dataSource: source, x_aliases: [] }]
  }
})

/**
 * Ingests one record through the store's two phases, as an ingest run does
 * (so the same invalidation is published): `source` publishes `identifier`
 * with `aliases`.
 */
export const ingestRecord = (options: {
  readonly source: SourceName
  readonly identifier: string
  readonly aliases?: ReadonlyArray<string>
  readonly size?: number
  readonly revision?: number
}) =>
  Effect.gen(function*() {
    const store = yield* VulnStore
    const record = cveRecord(options.identifier, options.source, options.size ?? 100, options.revision ?? 1)
    const content = JSON.stringify(record)
    const hash = createHash("sha256").update(content).digest("hex")
    const upstream = options.source === "ghsa" ? "osv" : options.source
    const [result] = yield* store.putRaw([{ source: upstream, identifier: options.identifier, content, hash }])
    yield* store.putNormalised([{
      source: upstream,
      identifier: options.identifier,
      hash,
      fresh: result!.outcome === "inserted",
      outputs: [{
        kind: "record",
        source: options.source,
        upstream: upstream as never,
        identifier: options.identifier,
        record,
        aliases: options.aliases ?? [],
        counts,
        gcve: false
      }]
    }], [])
  })
