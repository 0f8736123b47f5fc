/**
 * Text a PostgreSQL `text` column accepts: it cannot hold NUL, and a lone
 * UTF-16 surrogate has no UTF-8 encoding. Each becomes U+FFFD, so a logged
 * string keeps its length and shape and its row is still written.
 */
export const storableText = (value: string): string => {
  const wellFormed = value.isWellFormed() ? value : value.toWellFormed()
  return wellFormed.includes("\u0000") ? wellFormed.replaceAll("\u0000", "\uFFFD") : wellFormed
}

export const storableTextOrNull = (value: string | null): string | null => value === null ? null : storableText(value)
