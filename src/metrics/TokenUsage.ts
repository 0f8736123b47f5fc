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
const MARKER = Buffer.from('"usage"')
/** A usage object is a few hundred bytes; past this, what follows is not one. */
const WINDOW = 1024
const INPUT = /"(?:prompt_tokens|input_tokens)"\s*:\s*(\d+)/
const OUTPUT = /"(?:completion_tokens|output_tokens)"\s*:\s*(\d+)/

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
      this.read(text, true)
    }
    let at = bytes.indexOf(MARKER)
    while (at !== -1) {
      const end = Math.min(bytes.length, at + WINDOW)
      if (!this.read(bytes.toString("latin1", at + MARKER.length, end), end === bytes.length)) {
        this.carry = bytes.toString("latin1", at + MARKER.length, end)
      }
      at = bytes.indexOf(MARKER, at + MARKER.length)
    }
  }

  /** Reads the value after a `"usage"` key; false when it is an object the text cuts off (to retry with more). */
  read(text: string, cut: boolean): boolean {
    let i = 0
    while (i < text.length && (text[i] === " " || text[i] === ":" || text[i] === "\n" || text[i] === "\r" || text[i] === "\t")) i++
    if (text[i] !== "{") return i < text.length || !cut
    let depth = 0
    for (let j = i; j < text.length; j++) {
      const c = text.charCodeAt(j)
      if (c === 123 /* { */) depth++
      else if (c === 125 /* } */ && --depth === 0) {
        const object = text.slice(i, j + 1)
        const input = INPUT.exec(object)
        const output = OUTPUT.exec(object)
        if (input !== null) this.input = Number(input[1])
        if (output !== null) this.output = Number(output[1])
        return true
      }
    }
    return !cut || text.length >= WINDOW
  }
}
