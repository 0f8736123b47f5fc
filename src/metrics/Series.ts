/**
 * Label sets resolved to their metric once: the metric for a set is built on
 * first use and kept, so recording costs map lookups and no label object or
 * key string per event. Every label value passed here must come from a
 * bounded set (a provider slug, a surface, a capped organization or model).
 */
export const seriesBy2 = <M>(make: (a: string, b: string) => M) => {
  const byA = new Map<string, Map<string, M>>()
  return (a: string, b: string): M => {
    let byB = byA.get(a)
    if (byB === undefined) byA.set(a, byB = new Map())
    let metric = byB.get(b)
    if (metric === undefined) byB.set(b, metric = make(a, b))
    return metric
  }
}

export const seriesBy3 = <M>(make: (a: string, b: string, c: string) => M) => {
  const byA = new Map<string, (b: string, c: string) => M>()
  return (a: string, b: string, c: string): M => {
    let byBC = byA.get(a)
    if (byBC === undefined) byA.set(a, byBC = seriesBy2((b, c) => make(a, b, c)))
    return byBC(b, c)
  }
}

/**
 * At most `cap` distinct values pass through; later new ones read `other`, so a
 * label fed from outside (a model name a client chose, an organization) cannot
 * grow the series without bound.
 */
export const capped = (cap: number) => {
  const seen = new Set<string>()
  return (value: string): string => {
    if (seen.has(value)) return value
    if (seen.size >= cap) return "other"
    seen.add(value)
    return value
  }
}
