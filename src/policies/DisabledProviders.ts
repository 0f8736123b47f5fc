import { Config } from "effect"

/**
 * `VDB_GATEWAY_DISABLED_PROVIDERS`: comma-separated provider slugs refused
 * platform-wide (403 `provider_disabled`) for inference. Read once at start.
 */
export const disabledProviders: Config.Config<ReadonlySet<string>> = Config.String("VDB_GATEWAY_DISABLED_PROVIDERS")
  .pipe(
    Config.withDefault(""),
    Config.map((raw) => new Set(raw.split(",").map((slug) => slug.trim().toLowerCase()).filter((slug) => slug !== "")))
  )
