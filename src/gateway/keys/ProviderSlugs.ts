/**
 * The built-in provider slugs (spec 2, Resources). A local copy so the admin
 * contract and CLI need not load the provider catalog
 * (`src/gateway/providers/`); keep the two in step.
 */
export const PROVIDER_SLUGS = [
  "openai",
  "anthropic",
  "openrouter",
  "groq",
  "mistral",
  "deepseek",
  "xai",
  "together",
  "fireworks",
  "alibaba",
  "moonshot",
  "minimax",
  "kiro"
] as const

export type ProviderSlug = typeof PROVIDER_SLUGS[number]

const KNOWN: ReadonlySet<string> = new Set(PROVIDER_SLUGS)

export const isProviderSlug = (slug: string): slug is ProviderSlug => KNOWN.has(slug)
