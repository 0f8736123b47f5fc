import Ajv from "ajv"
import addFormats from "ajv-formats"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { NON_CVE_RECORD_ID } from "../../src/ingest/formats/index.ts"
import { FIXTURES } from "./corpus.ts"

/**
 * Validators for CVE Record Format 5.1.1 (draft-07). `multipleOfPrecision`
 * makes `multipleOf: 0.1` tolerant of binary floating point (8.2 / 0.1 is not
 * an integer in IEEE 754); the schema itself is not altered for that.
 */
const load = () => JSON.parse(readFileSync(join(FIXTURES, "schemas/cve-record-format-5.1.1.bundled.json"), "utf8"))

const compile = (schema: Record<string, unknown>) => {
  const ajv = new Ajv.default({ allErrors: true, strict: false, multipleOfPrecision: 9 })
  addFormats.default(ajv)
  return ajv.compile(schema)
}

export const validateCve = compile(load())

/**
 * The one relaxation for non-CVE identifiers (GHSA, PYSEC, RUSTSEC, GO, EUVD, ...):
 * `cveMetadata.cveId` also accepts those identifier forms. Nothing else changes.
 */
export const relaxedSchema = () => {
  const schema = load()
  const published = schema.definitions.cveMetadataPublished
  published.properties.cveId = {
    description: "vdb relaxation: the record identifier, a CVE id or another database's id",
    anyOf: [{ $ref: "#/definitions/cveId" }, { type: "string", pattern: NON_CVE_RECORD_ID.source }]
  }
  return schema
}

export const validateRelaxed = compile(relaxedSchema())
