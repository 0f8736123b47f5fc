import { Cause, Data, Effect, Layer, Result, Schema } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import { completeFrom } from "./McpPrompts.ts"
import { McpToolHandlers } from "./McpTools.ts"
import type { ToolFailure } from "./ToolKit.ts"

const Identifier = McpSchema.param("identifier", Schema.String)

/** A read refused as a JSON-RPC error (an unknown or invalid identifier), not as content. */
class ResourceReadError extends Schema.Error<ResourceReadError>("ResourceReadError")({
  ...McpSchema.McpErrorBase.fields,
  _tag: Schema.tag("ResourceReadError")
}) {}

/** The failure of a read, carried to `RefusalMiddleware` (see there). */
class RefusedRead extends Data.TaggedClass("RefusedRead")<{ readonly failure: ToolFailure; readonly uri: string }> {}

// The codes the library gives a URI no template matches: -32002 up to 2025-11-25, -32602 with
// the uri from 2026-07-28 on; an unknown identifier is the same "no such resource" to a client.
const notFoundCode = (protocolVersion: string) =>
  protocolVersion < "2026-07-28" ? -32002 : McpSchema.INVALID_PARAMS_ERROR_CODE

const readError = (refused: RefusedRead, protocolVersion: string) => {
  const { failure, uri } = refused
  switch (failure.code) {
    case "unknown_identifier":
      return new ResourceReadError({ code: notFoundCode(protocolVersion), message: failure.message, data: { uri } })
    case "invalid_argument":
      return new ResourceReadError({
        code: McpSchema.INVALID_PARAMS_ERROR_CODE,
        message: failure.message,
        data: { uri }
      })
    default:
      return new ResourceReadError({ code: McpSchema.INTERNAL_ERROR_CODE, message: failure.message })
  }
}

/**
 * McpServer answers every failure of a resource's content handler with InternalError
 * (-32603); only a middleware failure keeps its own code. So the handler ends a refused
 * read with a `RefusedRead` defect, and this middleware, innermost around it, turns that
 * into the JSON-RPC error before anything reports it as a crash.
 */
const RefusalMiddleware = McpServer.middleware((effect, { requestContext }) =>
  Effect.catchCause(effect, (cause) => {
    const defect = Cause.findDefect(cause)
    return Result.isSuccess(defect) && defect.success instanceof RefusedRead
      ? Effect.fail(readError(defect.success, requestContext.protocolVersion))
      : Effect.failCause(cause)
  })
)

/**
 * Records as MCP resources, for clients that browse resources instead of
 * calling tools: `vdb://vuln/{identifier}` (every source's record, JSON) and
 * `vdb://exploits/{identifier}` (the first page of exploits, JSON).
 */
export const McpResourcesLayer = Layer.unwrap(Effect.gen(function*() {
  const handlers = yield* McpToolHandlers
  const asJson = (tool: "lookup_vulnerability" | "list_exploits", uri: string, identifier: string) =>
    handlers[tool]({ identifier: decodeURIComponent(identifier) }).pipe(
      Effect.map((r) => ({ contents: [{ uri, mimeType: "application/json", text: JSON.stringify(r.data, null, 2) }] })),
      Effect.catchTag("ToolFailure", (failure) => Effect.die(new RefusedRead({ failure, uri })))
    )
  // An identifier is free text: no values to suggest, but the reference answers completion/complete.
  const completion = { identifier: completeFrom([]) }
  return Layer.mergeAll(
    McpServer.resource`vdb://vuln/${Identifier}`({
      name: "Vulnerability record",
      description:
        "Every source's view of a vulnerability: sources, aliases, titles (read get_source_record for a full record)",
      mimeType: "application/json",
      completion,
      content: (uri, identifier) => asJson("lookup_vulnerability", uri, identifier)
    }),
    McpServer.resource`vdb://exploits/${Identifier}`({
      name: "Vulnerability exploits",
      description: "The first page of public exploits for a vulnerability, with counts per source",
      mimeType: "application/json",
      completion,
      content: (uri, identifier) => asJson("list_exploits", uri, identifier)
    })
  ).pipe(Layer.provide(RefusalMiddleware.layer))
}))
