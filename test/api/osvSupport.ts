import addFormats from "ajv-formats"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Effect, Layer, Stream } from "effect"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { formatApiKey } from "../../src/auth/ApiKey.ts"
import { ingest } from "../../src/ingest/Ingest.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SecretBoxTest } from "../support/secrets.ts"

const SCHEMA = JSON.parse(readFileSync(new URL("../fixtures/osv-schema/schema.json", import.meta.url), "utf8"))

/** The vendored OSV schema (test/fixtures/osv-schema/PROVENANCE.md) as a validator. */
export const osvValidator = () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  ;(addFormats as unknown as (a: unknown) => void)(ajv)
  return ajv.compile(SCHEMA)
}

/** The API's real store and organizations over one SQL backend. */
export const osvDeps = <E, R>(backend: Layer.Layer<any, E, R>) =>
  Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(Layer.provideMerge(Layer.mergeAll(backend, SecretBoxTest)))

/** Ingests NDJSON lines (or one JSON file) of `source` through the real pipeline, as `vdb ingest` does. */
export const ingestText = (source: string, name: string, text: string, workers = 0) =>
  Effect.gen(function*() {
    const dir = mkdtempSync(join(tmpdir(), "vdb-osv-"))
    const path = join(dir, name)
    writeFileSync(path, text)
    yield* ingest({ paths: [path], source }, { workers }).pipe(Stream.runDrain)
  })

/** POSTs JSON (or text) with the organization's API key; the status and parsed body. */
export const post = (
  base: string,
  org: { readonly uuid: string; readonly secret: string },
  path: string,
  body: unknown
) =>
  Effect.promise(async () => {
    const response = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: formatApiKey(org.uuid, org.secret), "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  })

export const get = (
  base: string,
  org: { readonly uuid: string; readonly secret: string },
  path: string,
  headers: Record<string, string> = {}
) =>
  Effect.promise(async () => {
    const response = await fetch(`${base}${path}`, {
      headers: { authorization: formatApiKey(org.uuid, org.secret), ...headers }
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  })
