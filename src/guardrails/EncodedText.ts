/**
 * Text a provider decodes before the model reads it: a base64 or `data:`
 * payload of a textual media type (a CSV sent as a document, JSON as a file).
 * The rules read the decoded text; a redaction there writes the payload
 * again in the same encoding (`encode`).
 */
export interface DecodedText {
  readonly text: string
  /** The payload for a changed text, in the client's encoding; `undefined` when it cannot be written. */
  readonly encode: (text: string) => string | undefined
}

/** Why a payload cannot be inspected (a 403 `request_uninspectable`); never the payload itself. */
export type Undecodable = { readonly undecodable: string }

/**
 * Textual payloads the rules read per request, counted as sent (encoded), over all payloads: past
 * it the request is refused rather than forwarded with text nobody read. Bodies are at most 8 MiB,
 * so only a very large document reaches it.
 */
export const MAX_DECODED_BYTES = 4 * 1024 * 1024

const TEXTUAL =
  /^(?:text\/[\w.+-]+|[\w.-]+\/(?:[\w.-]+\+)?(?:json|xml|csv|x-ndjson|ndjson|jsonl|yaml|x-yaml|javascript|x-javascript|ecmascript|x-sh|sql|toml|markdown))$/

/** Bare base64 carries no type: the file name's extension says whether it is text. */
const TEXT_EXTENSIONS: ReadonlySet<string> = new Set([
  "txt",
  "text",
  "md",
  "markdown",
  "csv",
  "tsv",
  "json",
  "jsonl",
  "ndjson",
  "xml",
  "html",
  "htm",
  "yaml",
  "yml",
  "toml",
  "ini",
  "cfg",
  "conf",
  "log",
  "sql",
  "sh",
  "js",
  "mjs",
  "ts",
  "py",
  "rb",
  "go",
  "rs",
  "java",
  "c",
  "h",
  "cpp",
  "cs",
  "php",
  "css",
  "svg",
  "tex",
  "rst",
  "env"
])

export interface MediaType {
  readonly essence: string
  readonly charset: string | undefined
}

/** `Text/Plain; charset="UTF-8"` → `text/plain`, `utf-8`. */
export const parseMediaType = (value: string): MediaType => {
  const [head, ...params] = value.split(";")
  let charset: string | undefined
  for (const param of params) {
    const eq = param.indexOf("=")
    if (eq > 0 && param.slice(0, eq).trim().toLowerCase() === "charset") {
      charset = param.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1").toLowerCase()
    }
  }
  return { essence: head!.trim().toLowerCase(), charset }
}

export const isTextual = (type: MediaType): boolean => TEXTUAL.test(type.essence)

export const isTextFileName = (name: unknown): boolean => {
  if (typeof name !== "string") return false
  const dot = name.lastIndexOf(".")
  return dot >= 0 && TEXT_EXTENSIONS.has(name.slice(dot + 1).trim().toLowerCase())
}

interface Charset {
  decode(bytes: Buffer): string | undefined
  encode(text: string): Buffer | undefined
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const UTF8: Charset = {
  decode: (bytes) => {
    try {
      return utf8.decode(bytes)
    } catch {
      return undefined
    }
  },
  encode: (text) => text.isWellFormed() ? Buffer.from(text, "utf8") : undefined
}
const LATIN1: Charset = {
  decode: (bytes) => bytes.toString("latin1"),
  encode: (text) => /^[\u0000-\u00ff]*$/.test(text) ? Buffer.from(text, "latin1") : undefined
}
const UTF16LE: Charset = {
  decode: (bytes) => bytes.length % 2 === 0 ? bytes.toString("utf16le") : undefined,
  encode: (text) => Buffer.from(text, "utf16le")
}
const CHARSETS: ReadonlyMap<string, Charset> = new Map([
  ["utf-8", UTF8],
  ["utf8", UTF8],
  ["us-ascii", UTF8],
  ["ascii", UTF8],
  ["iso-8859-1", LATIN1],
  ["latin1", LATIN1],
  ["iso_8859-1", LATIN1],
  ["l1", LATIN1],
  ["utf-16le", UTF16LE]
])

/**
 * Base64 as a lenient decoder reads it (standard or URL-safe alphabet, line breaks ignored),
 * with padding only at the end: decoders disagree on what follows a `=` in the middle, and
 * text the gateway did not read could be read upstream.
 */
const BASE64 = /^[A-Za-z0-9+/\-_\s]*={0,2}\s*$/

/** Decodes base64 bytes of a textual type; `prefix` is kept as it is on a rewrite. */
export const decodeBase64Text = (payload: string, type: MediaType, prefix = ""): DecodedText | Undecodable => {
  if (!BASE64.test(payload)) return { undecodable: "a textual payload that is not valid base64" }
  const charset = charsetOf(type)
  if (charset === undefined) return { undecodable: "a textual payload in a character set the firewall does not read" }
  const text = charset.decode(Buffer.from(payload, "base64"))
  if (text === undefined) return { undecodable: "a textual payload whose bytes are not text in its character set" }
  return {
    text,
    encode: (next) => {
      const bytes = charset.encode(next)
      return bytes === undefined ? undefined : prefix + bytes.toString("base64")
    }
  }
}

/** A `data:` URL: `data:[type][;param…][;base64],payload`. */
export interface DataUrl {
  readonly type: MediaType
  readonly base64: boolean
  /** Everything up to and including the comma, as sent. */
  readonly prefix: string
  readonly payload: string
}

export const parseDataUrl = (url: string): DataUrl | undefined => {
  if (url.length < 5 || url.slice(0, 5).toLowerCase() !== "data:") return undefined
  const comma = url.indexOf(",")
  if (comma < 0) return undefined
  const header = url.slice(5, comma)
  const base64 = /;\s*base64\s*$/i.test(header)
  const typeText = base64 ? header.replace(/;\s*base64\s*$/i, "") : header
  // RFC 2397: no type means text/plain;charset=US-ASCII.
  const type = parseMediaType(
    typeText.trim() === "" || typeText.trim().startsWith(";") ? `text/plain${typeText}` : typeText
  )
  return { type, base64, prefix: url.slice(0, comma + 1), payload: url.slice(comma + 1) }
}

/** A percent-encoded (not base64) `data:` URL's text, of any type: the decoder upstream reads the escapes. */
export const decodePercentText = (url: DataUrl): DecodedText | Undecodable => {
  const charset = charsetOf(url.type)
  if (charset === undefined) return { undecodable: "a textual payload in a character set the firewall does not read" }
  const text = charset.decode(percentDecoded(url.payload))
  if (text === undefined) return { undecodable: "a textual payload whose bytes are not text in its character set" }
  return {
    text,
    encode: (next) => {
      const bytes = charset.encode(next)
      return bytes === undefined ? undefined : url.prefix + percentEncoded(bytes)
    }
  }
}

const charsetOf = (type: MediaType): Charset | undefined => CHARSETS.get(type.charset ?? "utf-8")

const HEX = /^[0-9a-fA-F]{2}$/

const percentDecoded = (payload: string): Buffer => {
  if (!payload.includes("%")) return Buffer.from(payload, "utf8")
  const parts: Array<Buffer> = []
  let from = 0
  for (let at = payload.indexOf("%"); at >= 0; at = payload.indexOf("%", at + 1)) {
    const hex = payload.slice(at + 1, at + 3)
    if (!HEX.test(hex)) continue
    parts.push(Buffer.from(payload.slice(from, at), "utf8"), Buffer.from([parseInt(hex, 16)]))
    from = at + 3
    at += 2
  }
  parts.push(Buffer.from(payload.slice(from), "utf8"))
  return Buffer.concat(parts)
}

const UNRESERVED = /[A-Za-z0-9\-._~ !$&'()*+,;=:@/?]/

const percentEncoded = (bytes: Buffer): string => {
  let out = ""
  for (const byte of bytes) {
    const ch = String.fromCharCode(byte)
    out += byte < 0x80 && ch !== " " && UNRESERVED.test(ch)
      ? ch
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return out
}
