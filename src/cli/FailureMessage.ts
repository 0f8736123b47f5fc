import { Cause, SchemaIssue } from "effect"
import { fileSystemLine, systemReason } from "../server/SystemError.ts"

/**
 * What `bin/vdb` prints when a command fails: one line a person can act on.
 *
 * Library and driver errors (`SqlError`, `HttpClientError`, `SocketError`,
 * `ConfigError`, schema issues, ...) carry messages written for developers
 * ("PgConnection: Query failed", "Transport error (GET <url>)"); they are
 * described here by kind instead. Our own tagged errors already carry a
 * message for people and pass through. Every line is bounded and printable,
 * since a message may echo input (a 10k-character identifier, a newline).
 */

/** Longest line printed; a message can echo arbitrary input. */
const MAX_LINE = 300

/** Runs of whitespace and control characters (a newline would break the one-line promise) become one space. */
const UNPRINTABLE = /[\s\p{Cc}\u2028\u2029]+/gu

export const oneLine = (text: string): string => {
  const line = text.replace(UNPRINTABLE, " ").trim()
  return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE - 1)}…` : line
}

const INTERNAL = "internal error; run it again with VDB_LOG_LEVEL=Debug for details"

type Describe = (error: any) => string | undefined

/**
 * An error's kind: its `_tag`, or for a defect that crossed the admin socket
 * (encoded as `{ name, message }`, so the tag is gone) the last segment of a
 * library-qualified name such as `effect/sql/SqlError`.
 */
const tagOf = (u: unknown): string | undefined => {
  if (typeof u !== "object" || u === null) return undefined
  if ("_tag" in u && typeof u._tag === "string") return u._tag
  const name = "name" in u && typeof u.name === "string" ? u.name : ""
  return name.includes("/") ? name.slice(name.lastIndexOf("/") + 1) : undefined
}

/** A wrapper's reason: `reason` on the live error, `cause` once it has crossed the socket. */
const reasonOf = (e: any): unknown => e?.reason ?? e?.cause

const messageOf = (u: unknown): string =>
  typeof u === "object" && u !== null && "message" in u && typeof u.message === "string" ? u.message : ""

/** The first schema issue as `path: expected ...` (the default formatter spans several lines). */
export const issueLine = (issue: SchemaIssue.Issue): string => {
  const [first] = SchemaIssue.makeFormatterStandardSchemaV1()(issue).issues
  if (first === undefined) return "invalid input"
  const message = first.message.charAt(0).toLowerCase() + first.message.slice(1)
  const path = (first.path ?? []).map(String).join(".")
  return path === "" ? `invalid input: ${message}` : `invalid ${path}: ${message}`
}

/** Scheme, host and port only: the path can be the user's (long) input. */
const originOf = (url: unknown) => {
  try {
    return new URL(String(url)).origin
  } catch {
    return "the server"
  }
}

const httpLine: Describe = (reason) => {
  const origin = originOf(reason?.request?.url)
  switch (tagOf(reason)) {
    case "TransportError":
      return `cannot reach ${origin} (${systemReason(reason.cause, "connection failed")}); ` +
        "is `bin/vdb serve` running, and is VDB_API_URL right?"
    case "InvalidUrlError":
      return "VDB_API_URL is not a valid URL"
    case "StatusCodeError": {
      const status = reason.response?.status
      return `${origin} answered HTTP ${status ?? "error"} without an explanation; is VDB_API_URL a vdb API?`
    }
    case "DecodeError":
    case "EmptyBodyError":
      return `${origin} sent an answer vdb cannot read (HTTP ${
        reason.response?.status ?? "?"
      }); is VDB_API_URL a vdb API?`
    default:
      return `the request to ${origin} failed`
  }
}

const SQL_REASONS: Record<string, string> = {
  ConnectionError: "cannot connect to the database",
  AuthenticationError: "the database refused the credentials in DATABASE_URL",
  AuthorizationError: "the database user may not do this",
  LockTimeoutError: "the database is busy (a lock timed out); try again",
  DeadlockError: "the database is busy (deadlock); try again",
  SerializationError: "the database is busy (serialization conflict); try again",
  StatementTimeoutError: "the database took too long to answer",
  UniqueViolation: "that already exists"
}

const sqlLine: Describe = (error) => {
  const reason: any = reasonOf(error)
  const kind = tagOf(reason) ?? ""
  if (kind === "ConnectionError") {
    return `cannot connect to the database (${systemReason(reason, "connection failed")}); check DATABASE_URL`
  }
  // SQLSTATE class 22 (data exception): a value the database cannot take, such as a malformed UUID.
  if (/^22/.test(String(reason?.cause?.code ?? ""))) return "the database refused a value in this request as malformed"
  return SQL_REASONS[kind] ?? `the database could not complete the operation; ${INTERNAL}`
}

const SOCKET_STOPPED = "the vdb server closed the admin connection (did it stop?); run the command again"

const socketLine: Describe = (reason) => {
  switch (tagOf(reason)) {
    case "SocketOpenError":
      return "cannot connect to the running vdb server's admin socket; is it still starting or stopping?"
    case "SocketCloseError":
    case "SocketReadError":
    case "SocketWriteError":
      return SOCKET_STOPPED
    default:
      return undefined
  }
}

const configLine: Describe = (error) => {
  const cause = error?.cause
  if (tagOf(cause) === "SchemaError" && cause.issue !== undefined) {
    return issueLine(cause.issue).replace(/^invalid input: /, "invalid setting: ")
  }
  return `cannot read the configuration: ${messageOf(cause)}`
}

/** Library and platform error kinds, by tag: each becomes a line without internal names. */
const byKind: Record<string, Describe> = {
  ConfigError: configLine,
  SchemaError: (e) => e.issue === undefined ? undefined : issueLine(e.issue),
  HttpClientError: (e) => httpLine(reasonOf(e)),
  SqlError: sqlLine,
  SocketError: (e) => socketLine(reasonOf(e)),
  RpcClientError: (e) =>
    socketLine(reasonOf(e)) ?? (tagOf(reasonOf(e)) === "RpcClientDefect" ? SOCKET_STOPPED : undefined),
  ServeError: (e) => `cannot listen (${systemReason(e.cause, "listen failed")})`,
  // Reasons that escape their wrapper (the RPC client fails with the bare reason at times).
  SocketCloseError: socketLine,
  SocketReadError: socketLine,
  SocketWriteError: socketLine,
  SocketOpenError: socketLine,
  TransportError: httpLine,
  StatusCodeError: httpLine
}

/** `new Error("Schema validation failed", { cause: issue })`, thrown by `Schema.decodeUnknownSync` and friends. */
const schemaThrow = (u: unknown) => {
  const cause = (u as { cause?: unknown })?.cause
  return u instanceof Error && SchemaIssue.isIssue(cause) ? issueLine(cause) : undefined
}

/** The kinds in an error's `cause` chain, outermost first (for the debug log). */
export const kindsOf = (error: unknown): Array<string> => {
  const kinds: Array<string> = []
  for (
    let e = error, depth = 0;
    typeof e === "object" && e !== null && depth < 8;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    kinds.push(tagOf(e) ?? (e as Error).name ?? "unknown")
    const reason = tagOf((e as { reason?: unknown }).reason)
    if (reason !== undefined) kinds.push(reason)
    const code = (e as { code?: unknown }).code
    if (typeof code === "string" && code.length <= 16) kinds.push(code)
  }
  return kinds
}

/** Built-in JavaScript failures are bugs, not something the user did: their text means nothing to them. */
const isBug = (u: unknown) =>
  u instanceof TypeError || u instanceof RangeError || u instanceof ReferenceError || u instanceof SyntaxError

/** A bug's stack, for the debug log only: the line on stderr never shows it. */
export const bugStack = (error: unknown): string | undefined => isBug(error) ? (error as Error).stack : undefined

/** The one line for an error: a known kind anywhere in its cause chain, else its own message. */
export const describeError = (error: unknown): string => {
  for (
    let e = error, depth = 0;
    typeof e === "object" && e !== null && depth < 8;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const kind = tagOf(e)
    const line = (kind === undefined ? undefined : byKind[kind]?.(e)) ?? schemaThrow(e) ?? fileSystemLine(e)
    if (line !== undefined) return oneLine(line)
  }
  if (isBug(error)) return INTERNAL
  const message = oneLine(messageOf(error) || (typeof error === "string" ? error : ""))
  return message === "" ? INTERNAL : message
}

/** The line for a failed command: its first expected failure, else its first defect. */
export const describeCause = (cause: Cause.Cause<unknown>): string => describeError(Cause.squash(cause))
