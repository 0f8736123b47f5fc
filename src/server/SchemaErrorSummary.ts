/**
 * A request-decoding failure's message for a client: what was expected and
 * where, in at most three lines joined by `; ` and 300 characters. The value
 * that was sent (`got ...`) is dropped: it may be a key or a secret.
 */
export const schemaErrorSummary = (message: string): string =>
  message.split("\n").slice(0, 3).map((line) => line.replace(/,? got .*$/, "").trim()).join("; ").slice(0, 300)
