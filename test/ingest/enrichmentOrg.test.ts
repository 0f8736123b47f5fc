import { describe, expect, it } from "vitest"
import { uuidV4Shaped } from "../../src/ingest/formats/ids.ts"
import { VDB_ADP_ORG_ID } from "../../src/vulns/EnrichmentContainer.ts"

describe("the enrichment container's organization id", () => {
  it("is the one the normalisers derive, so the store recognises the containers they write", () => {
    expect(VDB_ADP_ORG_ID).toBe(uuidV4Shaped("vdb"))
  })
})
