/**
 * Token counts read from a provider's answer without parsing it: the gateway
 * relays bytes as they arrive and never buffers a stream to count. The bytes
 * are searched (natively) for `"usage"`; only the small object that follows is
 * decoded. This covers OpenAI's `usage` (`prompt_tokens`/`completion_tokens` in
 * chat completions, the final chunk of a stream with `include_usage`;
 * `input_tokens`/`output_tokens` in responses and `response.completed`) and
 * Anthropic's (`message_start` and the cumulative `message_delta`). A later
 * count replaces an earlier one, as Anthropic's cumulative counts require.
 * Inside a JSON string the quotes are escaped, so text a model writes cannot
 * match; a usage object cut across two chunks is read from both, but a
 * `"usage"` marker itself cut across two chunks is missed (the counts are then
 * absent, never wrong).
 */
const MARKER = Buffer.from("\"usage\"")
/** A usage object is a few hundred bytes; past this, what follows is not one. */
const WINDOW = 1024
const INPUT = /"(?:prompt_tokens|input_tokens)"\s*:\s*(\d+)/
const OUTPUT = /"(?:completion_tokens|output_tokens)"\s*:\s*(\d+)/

const SPACE = new Set([0x20, 0x3a, /* : */ 0x0a, 0x0d, 0x09])

export class UsageTap {
  input = -1
  output = -1
  /** The start of a usage object whose end is in the next chunk. */
  carry: string | undefined = undefined

  scan(chunk: Uint8Array): void {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    if (this.carry !== undefined) {
      const text = this.carry + bytes.toString("latin1", 0, Math.min(bytes.length, WINDOW))
      this.carry = undefined
      const end = objectEnd(text, 0)
      if (end > 0) this.take(text.slice(0, end))
    }
    let at = bytes.indexOf(MARKER)
    while (at !== -1) {
      this.readAt(bytes, at + MARKER.length)
      at = bytes.indexOf(MARKER, at + MARKER.length)
    }
  }

  /** The value after a `"usage"` key, read on the bytes: only an object's own bytes are decoded. */
  private readAt(bytes: Buffer, from: number): void {
    let i = from
    while (i < bytes.length && SPACE.has(bytes[i]!)) i++
    if (i === bytes.length) {
      this.carry = ""
      return
    }
    if (bytes[i] !== 0x7b /* { */) return
    const limit = Math.min(bytes.length, i + WINDOW)
    let depth = 0
    for (let j = i; j < limit; j++) {
      const c = bytes[j]
      if (c === 0x7b) depth++
      else if (c === 0x7d /* } */ && --depth === 0) return this.take(bytes.toString("latin1", i, j + 1))
    }
    // Cut by the chunk's end: the rest comes with the next chunk.
    if (limit === bytes.length) this.carry = bytes.toString("latin1", i, limit)
  }

  private take(object: string): void {
    const input = INPUT.exec(object)
    const output = OUTPUT.exec(object)
    if (input !== null) this.input = Number(input[1])
    if (output !== null) this.output = Number(output[1])
  }
}

/** The end (exclusive) of the object a carried text starts (after spaces), or 0 when it is not one or not whole. */
const objectEnd = (text: string, from: number): number => {
  let i = from
  while (i < text.length && SPACE.has(text.charCodeAt(i))) i++
  if (text.charCodeAt(i) !== 0x7b) return 0
  let depth = 0
  for (let j = i; j < Math.min(text.length, i + WINDOW); j++) {
    const c = text.charCodeAt(j)
    if (c === 0x7b) depth++
    else if (c === 0x7d && --depth === 0) return j + 1
  }
  return 0
}
