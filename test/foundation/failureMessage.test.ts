import { Cause, Config, ConfigProvider, Effect, Exit, Schema } from "effect"
import { HttpClientError, HttpClientRequest, HttpClientResponse } from "effect/http"
import { RpcClientError } from "effect/rpc"
import { Socket } from "effect/socket"
import { SqlError } from "effect/sql"
import { describe, expect, it } from "vitest"
import { ORG_NAME_MAX_LENGTH, OrgName } from "../../schema/Organization.ts"
import { describeCause, describeError, kindsOf } from "../../src/cli/FailureMessage.ts"
import { printable } from "../../src/cli/Output.ts"

/** Library names and phrasings a person cannot act on; none may reach the CLI's error line. */
const INTERNAL_NAMES =
  /PgConnection|Schema validation failed|Transport error|StatusCode error|SocketCloseError|SocketReadError|SchemaError|ConfigError|SqlError|RpcClientError|ServeError|UnknownError/

const expectHumanLine = (line: string) => {
  expect(line).not.toMatch(INTERNAL_NAMES)
  expect(line).not.toMatch(/[\n\r\t]/)
  expect(line.length).toBeLessThanOrEqual(300)
  expect(line.length).toBeGreaterThan(10)
}

const systemError = (code: string, message: string) => Object.assign(new Error(message), { code })

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: "ERROR" })

describe("FailureMessage: error kinds become one line a person understands", () => {
  const request = HttpClientRequest.get(`http://127.0.0.1:9/v1/info/${"A".repeat(10_000)}`)

  it("describes a server that is not running by its origin, never the whole URL", () => {
    const error = new HttpClientError.HttpClientError({
      reason: new HttpClientError.TransportError({
        request,
        cause: new TypeError("fetch failed", { cause: systemError("ECONNREFUSED", "connect ECONNREFUSED") })
      })
    })
    const line = describeError(error)
    expectHumanLine(line)
    expect(line).toContain("cannot reach http://127.0.0.1:9 (connection refused)")
    expect(line).toContain("bin/vdb serve")
    expect(line).not.toContain("AAAA")
  })

  it("describes an unexpected HTTP status without echoing the request", () => {
    const response = HttpClientResponse.fromWeb(request, new Response(null, { status: 404 }))
    const line = describeError(
      new HttpClientError.HttpClientError({ reason: new HttpClientError.StatusCodeError({ request, response }) })
    )
    expectHumanLine(line)
    expect(line).toContain("HTTP 404")
    expect(line).not.toContain("AAAA")
  })

  it("describes SQL failures by kind, not by the driver's words", () => {
    const malformed = new SqlError.SqlError({
      reason: new SqlError.UnknownError({
        cause: pgError("22P02", "invalid input syntax for type uuid: \"zzz\""),
        message: "PgConnection: Query failed"
      })
    })
    expect(describeError(malformed)).toBe("the database refused a value in this request as malformed")
    const refused = new SqlError.SqlError({
      reason: new SqlError.ConnectionError({
        cause: systemError("ECONNREFUSED", "connect ECONNREFUSED"),
        message: "PgConnection: Failed to connect"
      })
    })
    const line = describeError(refused)
    expectHumanLine(line)
    expect(line).toBe("cannot connect to the database (connection refused); check DATABASE_URL")
    // A domain error wrapping a driver error is described by what went wrong underneath.
    const wrapped = Object.assign(new Error("database migration failed: PgConnection: Failed to connect"), {
      _tag: "MigrationFailed",
      cause: { _tag: "MigrationError", cause: refused }
    })
    expect(describeError(wrapped)).toBe(line)
  })

  it("describes a driver error that crossed the admin socket as a defect (tag lost, name kept)", () => {
    const error = new SqlError.SqlError({
      reason: new SqlError.UnknownError({ cause: new Error("x"), message: "PgConnection: Query failed" })
    })
    const crossed = Schema.decodeUnknownSync(Schema.Defect())(Schema.encodeUnknownSync(Schema.Defect())(error))
    const line = describeError(crossed)
    expectHumanLine(line)
    expect(line).toMatch(/^the database could not complete the operation/)
  })

  it("describes a lost admin connection (the server stopped) in words", () => {
    const closed = new RpcClientError.RpcClientError({ reason: new Socket.SocketCloseError({ code: 1000 }) })
    const read = new Socket.SocketError({
      reason: new Socket.SocketReadError({ cause: systemError("ECONNRESET", "read") })
    })
    for (const error of [closed, read]) {
      const line = describeError(error)
      expectHumanLine(line)
      expect(line).toContain("the vdb server closed the admin connection")
    }
  })

  it("describes schema and configuration failures as one line with the path", () => {
    const Payload = Schema.Struct({
      limits: Schema.Struct({ perMinute: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)) })
    })
    const thrown = Exit.match(Schema.decodeUnknownExit(Payload)({ limits: { perMinute: -3 } }), {
      onFailure: (cause) => Cause.squash(cause),
      onSuccess: () => undefined
    })
    const line = describeError(thrown)
    expectHumanLine(line)
    expect(line).toMatch(/^invalid limits\.perMinute: expected a value greater than or equal to 0/)
    const asThrown = new Error("Schema validation failed", { cause: (thrown as Schema.SchemaError).issue })
    expect(describeError(asThrown)).toBe(line)

    const config = Effect.runSyncExit(
      Config.Port("VDB_API_PORT").parse(ConfigProvider.fromUnknown({ VDB_API_PORT: "abc" }))
    )
    const configLine = Exit.isFailure(config) ? describeCause(config.cause) : ""
    expectHumanLine(configLine)
    expect(configLine).toMatch(/^invalid VDB_API_PORT: /)
  })

  it("passes our own messages through, bounded and on one line; bugs become a pointer to the debug log", () => {
    expect(describeError({ _tag: "OrgError", message: "organization x does not exist" })).toBe(
      "organization x does not exist"
    )
    const long = describeError({ _tag: "Whatever", message: `bad\nthing ${"B".repeat(10_000)}` })
    expect(long.length).toBeLessThanOrEqual(300)
    expect(long).toMatch(/^bad thing B+…$/)
    expect(describeError(new TypeError("Cannot read properties of undefined (reading 'x')"))).toMatch(
      /^internal error; run it again with VDB_LOG_LEVEL=Debug/
    )
    expect(describeError(new Error(""))).toMatch(/^internal error/)
  })

  it("describes a file-system failure by what it tried, where, and why", () => {
    const error = Object.assign(new Error("EACCES: permission denied, mkdir '/srv/vdb'"), {
      code: "EACCES",
      syscall: "mkdir",
      path: "/srv/vdb"
    })
    expect(describeError(error)).toBe("cannot create the directory /srv/vdb: permission denied")
  })

  it("lists error kinds and codes for the debug log without any message text", () => {
    const error = new SqlError.SqlError({
      reason: new SqlError.UnknownError({ cause: pgError("22P02", "secret-ish \"zzz\""), message: "m" })
    })
    const kinds = kindsOf(error)
    expect(kinds).toEqual(expect.arrayContaining(["SqlError", "UnknownError", "22P02"]))
    expect(JSON.stringify(kinds)).not.toContain("zzz")
  })
})

describe("OrgName: printable text of bounded length", () => {
  const decode = Schema.decodeUnknownExit(OrgName)
  it("accepts printable names, including non-Latin text", () => {
    for (const name of ["acme", "  Acme Inc.  ", "Ünïcødé 株式会社 🚀", "x".repeat(ORG_NAME_MAX_LENGTH)]) {
      expect(Exit.isSuccess(decode(name))).toBe(true)
    }
  })
  it("refuses control characters, line separators, bidi overrides, empty and over-long names", () => {
    const refused = ["a\nb", "a\tb", "a\u0000b", "a\u007fb", "a\u2028b", "evil\u202Etxt.exe", "   ", "a\ud800b"]
    for (const name of [...refused, "x".repeat(ORG_NAME_MAX_LENGTH + 1)]) {
      expect(Exit.isFailure(decode(name)), JSON.stringify(name)).toBe(true)
    }
  })
  it("table cells show stored control characters as escapes", () => {
    expect(printable("a\nb\u0007")).toBe("a\\u000ab\\u0007")
  })
})
