import { Effect } from "effect"
import { isProviderSlug, PROVIDER_SLUGS } from "../keys/ProviderSlugs.ts"
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
        : `unknown provider ${JSON.stringify(slug.slice(0, 64))} (known: ${PROVIDER_SLUGS.join(", ")}, or a custom provider of this organization)`)
