/**
 * Splits a migration file into single statements. The PostgreSQL driver uses
 * the extended protocol, which takes one statement per query, so a file of
 * several statements is run one by one (inside the migrator's transaction).
 * Understands quotes, dollar-quoted bodies and comments, so a `;` inside a
 * function body or a string does not split.
 */
export const splitStatements = (text: string): Array<string> => {
  const statements: Array<string> = []
  let current = ""
  let i = 0
  while (i < text.length) {
    const ch = text[i]!
    const rest = text.slice(i)
    if (rest.startsWith("--")) {
      const end = text.indexOf("\n", i)
      i = end === -1 ? text.length : end + 1
      current += "\n"
      continue
    }
    if (rest.startsWith("/*")) {
      const end = text.indexOf("*/", i + 2)
      i = end === -1 ? text.length : end + 2
      current += " "
      continue
    }
    if (ch === "'" || ch === "\"") {
      let j = i + 1
      while (j < text.length) {
        if (text[j] === ch) {
          if (text[j + 1] === ch) {
            j += 2
            continue
          }
          break
        }
        j++
      }
      current += text.slice(i, j + 1)
      i = j + 1
      continue
    }
    const dollar = /^\$[A-Za-z_]*\$/.exec(rest)
    if (dollar !== null) {
      const tag = dollar[0]
      const end = text.indexOf(tag, i + tag.length)
      const stop = end === -1 ? text.length : end + tag.length
      current += text.slice(i, stop)
      i = stop
      continue
    }
    if (ch === ";") {
      if (current.trim() !== "") statements.push(current.trim())
      current = ""
      i++
      continue
    }
    current += ch
    i++
  }
  if (current.trim() !== "") statements.push(current.trim())
  return statements
}
