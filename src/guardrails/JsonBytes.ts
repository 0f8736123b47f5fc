/** Byte-level reading of JSON text shared by the shape check and the splice scanner. */

export const QUOTE = 0x22
export const BACKSLASH = 0x5c

export const skipWhitespace = (b: Uint8Array, i: number): number => {
  while (i < b.length) {
    const c = b[i]!
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i
    i++
  }
  return i
}

/** A key literal's text (`start` at its opening quote, `end` past its closing one), unescaped. */
export const decodedKey = (b: Buffer, start: number, end: number): string => {
  const raw = b.toString("utf8", start + 1, end - 1)
  return raw.includes("\\") ? JSON.parse(b.toString("utf8", start, end)) as string : raw
}
