/**
 * Whether a request declares (`Content-Length`) a body over `max` bytes. Every surface that caps
 * its request bodies refuses such a request before reading any of it; a body without a declared
 * length is refused as soon as more than `max` bytes have arrived.
 */
export const declaresOver = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  max: number
) => {
  const declared = headers["content-length"]
  return typeof declared === "string" && Number(declared) > max
}
