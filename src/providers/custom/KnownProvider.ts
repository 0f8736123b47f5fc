import { Effect, type Redacted } from "effect"
import type { ProviderKeys } from "../../vault/ProviderKeys.ts"
import { isProviderSlug, PROVIDER_SLUGS } from "../ProviderSlugs.ts"
import type { CustomProviders } from "./CustomProviders.ts"

/**
 * Why `slug` names no provider of the organization (neither built in nor one of its own custom
 * providers), or undefined when it does. A policy or key for a slug no route serves never applies
 * (a typo like `opnai`), so every path that stores or checks one refuses it with this reason.
 */
export const unknownProviderReason = (custom: CustomProviders["Service"], org: string, slug: string) =>
  isProviderSlug(slug)
    ? Effect.succeed(undefined)
    : Effect.map(custom.lookup(org, slug), (route) =>
      route !== undefined
        ? undefined
        : `unknown provider ${JSON.stringify(slug.slice(0, 64))} (known: ${
          PROVIDER_SLUGS.join(", ")
        }, or a custom provider of this organization)`)

/**
 * Stores the organization's key for `slug`, a provider `unknownProviderReason` accepted. A custom
 * provider can be removed while its key is written: removal deletes the provider, then its key,
 * so a key written after that delete outlived its provider, listed and impossible to delete (the
 * slug names no provider any more). The provider is read again after the write, from the store
 * (the per-process cache lags a removal made in another process), and a key whose provider is
 * gone is taken out again: `false`, and the caller refuses as for an unknown provider.
 */
export const storeProviderKey = (
  custom: CustomProviders["Service"],
  providerKeys: ProviderKeys["Service"],
  org: string,
  slug: string,
  key: Redacted.Redacted<string>
): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    yield* providerKeys.set(org, slug, key)
    if (isProviderSlug(slug) || (yield* custom.registered(org, slug))) return true
    yield* providerKeys.remove(org, slug)
    return false
  })
