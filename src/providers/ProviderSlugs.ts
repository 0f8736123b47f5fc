import { builtinProviders } from "./catalog/index.ts"

/**
 * The built-in provider slugs (spec 2, Resources), read from the provider
 * catalog so there is one list: the catalog is plain data, cheap enough for
 * the admin contract and the CLI to load.
 */
export const PROVIDER_SLUGS: ReadonlyArray<string> = builtinProviders.map((provider) => provider.slug)

const KNOWN: ReadonlySet<string> = new Set(PROVIDER_SLUGS)

export const isProviderSlug = (slug: string): boolean => KNOWN.has(slug)
