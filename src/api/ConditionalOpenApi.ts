const etag = {
  description: "Weak entity tag of the stored records this answer was built from; changes when an ingest changes them.",
  schema: { type: "string" }
}
const codingHeaders = {
  Vary: { description: "`Accept-Encoding`: the body is sent in several codings.", schema: { type: "string" } },
  "Content-Encoding": {
    description: "`gzip` or `br` when the client accepts one (quality values honoured) and the body is 1 KiB or more.",
    schema: { type: "string", enum: ["gzip", "br"] }
  }
}

/** The 200 of `operation` with the `ETag` header, and `Vary` and `Content-Encoding` when `compressed`. */
const withAnswerHeaders = (operation: Record<string, any>, compressed: boolean): Record<string, any> => {
  const responses: Record<string, any> = { ...operation.responses }
  const response = responses["200"]
  if (response !== undefined) {
    responses["200"] = {
      ...response,
      headers: { ...response.headers, ETag: etag, ...(compressed ? codingHeaders : {}) }
    }
  }
  return responses
}

/**
 * The headers of `/v1/query`'s answers in the OpenAPI document: `ETag`, `Vary` and
 * `Content-Encoding` (an answer of 1 KiB or more is sent in the coding the client accepts). A
 * POST is never answered 304, so no `If-None-Match`. Added to the generated operation, as
 * `conditionalOperation` adds them, rather than declared with `HttpApiSchema.WithHeaders`, which
 * would make the typed client's result `{body, headers}`.
 */
export const codedOperation = (operation: Record<string, any>): Record<string, any> => ({
  ...operation,
  responses: withAnswerHeaders(operation, true)
})

/**
 * The conditional-request contract of `/info`, `/vuln` and `/exploits` in the
 * OpenAPI document: the `If-None-Match` parameter, the `ETag` (and, on
 * `/vuln`, `Vary` and `Content-Encoding`) response headers, and the 304. Added
 * to the generated operation rather than declared as a second success schema,
 * so the typed client's result stays the body alone.
 */
export const conditionalOperation =
  (options: { readonly compressed: boolean }) => (operation: Record<string, any>): Record<string, any> => {
    const responses = withAnswerHeaders(operation, options.compressed)
    responses["304"] = {
      description:
        "Not Modified: `If-None-Match` matched the current entity tag (weak comparison, `*` or a list). No body; counted against the rate limits and logged like a 200.",
      headers: { ETag: etag, ...(options.compressed ? { Vary: codingHeaders.Vary } : {}) }
    }
    return {
      ...operation,
      parameters: [
        ...(operation.parameters ?? []),
        {
          name: "If-None-Match",
          in: "header",
          required: false,
          description: "Entity tags from earlier answers (or `*`): 304 when one matches the current answer.",
          schema: { type: "string" }
        }
      ],
      responses
    }
  }
