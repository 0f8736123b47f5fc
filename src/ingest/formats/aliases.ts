/**
 * The alias graph, OSV rules: an alias link is symmetric (A lists B ⇒ B is an
 * alias of A); `related` and upstream/downstream links are not aliases; aliases
 * of aliases are aliases (one connected component).
 */
export interface AliasEdge {
  readonly from: string
  readonly to: string
}

/** Edges of one record: its identifier to each alias it names. */
export const aliasEdges = (identifier: string, aliases: ReadonlyArray<string>): Array<AliasEdge> =>
  aliases.filter((a) => a !== identifier).map((to) => ({ from: identifier, to }))

/** Every identifier connected to `id`, `id` excluded, sorted. */
export const aliasComponent = (edges: ReadonlyArray<AliasEdge>, id: string): Array<string> => {
  const adjacent = new Map<string, Set<string>>()
  const link = (a: string, b: string) => {
    const s = adjacent.get(a) ?? new Set<string>()
    s.add(b)
    adjacent.set(a, s)
  }
  for (const e of edges) {
    link(e.from, e.to)
    link(e.to, e.from)
  }
  const seen = new Set([id])
  const queue = [id]
  while (queue.length > 0) {
    for (const next of adjacent.get(queue.pop()!) ?? []) {
      if (!seen.has(next)) {
        seen.add(next)
        queue.push(next)
      }
    }
  }
  seen.delete(id)
  return [...seen].sort()
}
