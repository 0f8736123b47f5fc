import { Schema } from "effect"

/**
 * The HTTP status an error class declares with its `httpApiStatus` annotation, the one place it
 * is stated: HttpApi reads the same annotation to answer with it and to document it. An error of
 * a class without one is a 500, as HttpApi answers it.
 */
export const statusOf = (error: object): number => {
  const status = Schema.resolveAnnotations(error.constructor as Schema.Top)?.httpApiStatus
  return typeof status === "number" ? status : 500
}

/** The status of a schema (an error class, or a wire schema built on one), as HttpApi reads it. */
export const schemaStatus = (schema: Schema.Top): number => {
  const status = Schema.resolveAnnotations(schema)?.httpApiStatus
  return typeof status === "number" ? status : 500
}
