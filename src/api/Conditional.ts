import { createHash } from "node:crypto"

/**
 * Entity tags of the API's answers. Weak (`W/"..."`): `/info` and
 * `/exploits` carry a per-response time, and `/vuln` is sent in several
 * content codings, so the bytes differ while the stored data they show is the
 * same. The tag is a hash of the stable part of the answer, which changes
 * exactly when the stored records it was built from change.
 */
export const weakEtag = (stable: string | Uint8Array | ReadonlyArray<Uint8Array>) => {
  const hash = createHash("sha256")
  // Parts hash as the bytes they join to: the same tag as the joined body's.
  if (typeof stable === "string" || stable instanceof Uint8Array) hash.update(stable)
  else for (const part of stable) hash.update(part)
  return `W/"${hash.digest("base64url").slice(0, 27)}"`
}

const ENTITY_TAG = /\s*(?:W\/)?"([^"]*)"\s*(?:,|$)/gy

const opaque = (etag: string) => {
  const start = etag.indexOf("\"")
  return etag.slice(start + 1, -1)
}

/**
 * RFC 9110 §13.1.2: whether `If-None-Match` matches the current tag, by weak
 * comparison (the `W/` prefix is ignored on both sides). `*` matches any
 * current representation; a list matches when any member does. A malformed
 * header matches nothing (the full answer is sent).
 */
export const noneMatch = (header: string | undefined, etag: string): boolean => {
  if (header === undefined) return false
  const value = header.trim()
  if (value === "") return false
  if (value === "*") return true
  const ours = opaque(etag)
  ENTITY_TAG.lastIndex = 0
  let match: RegExpExecArray | null
  while ((match = ENTITY_TAG.exec(value)) !== null) {
    if (match[1] === ours) return true
    if (ENTITY_TAG.lastIndex >= value.length) break
  }
  return false
}
