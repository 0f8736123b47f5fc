const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** An entry's model id: `{modelId}`, or the bare string some answers give for `defaultModel`. */
const modelIdOf = (entry: unknown): string | undefined =>
  typeof entry === "string" ? entry : isObject(entry) && typeof entry.modelId === "string" ? entry.modelId : undefined

/** The model ids a `ListAvailableModels` answer offers: `models[].modelId` (and `defaultModel.modelId`). */
export const offeredModels = (listing: Record<string, unknown>): ReadonlyArray<string> => {
  const ids = new Set<string>()
  if (Array.isArray(listing.models)) {
    for (const entry of listing.models) {
      const id = modelIdOf(entry)
      if (id !== undefined) ids.add(id)
    }
  }
  const fallback = modelIdOf(listing.defaultModel)
  if (fallback !== undefined) ids.add(fallback)
  return [...ids]
}

/**
 * Upstream's own listing with the models the organization may not use taken
 * out: entries of `models` whose `modelId` is refused (or missing), and `defaultModel`
 * when it is refused. Every other field is kept as upstream sent it.
 */
export const filterListing = (
  listing: Record<string, unknown>,
  visible: ReadonlySet<string>
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...listing }
  if (Array.isArray(listing.models)) {
    out.models = listing.models.filter((entry) => {
      const id = modelIdOf(entry)
      // An entry without a model id cannot be checked against the policy: it goes too.
      return id !== undefined && visible.has(id)
    })
  }
  const fallback = modelIdOf(listing.defaultModel)
  if (fallback !== undefined && !visible.has(fallback)) delete out.defaultModel
  return out
}
