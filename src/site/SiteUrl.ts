import { Config, Option } from "effect"

/**
 * `VDB_SITE_URL`: the site's public origin (e.g. `https://vdb.example`), used
 * for `verification_uri`, the same-origin check and the cookies' `Secure`
 * flag. Unset: the origin the request was addressed to (`http://` + Host),
 * which is right for a site served directly on loopback or a LAN.
 */
export const SiteUrl = Config.option(Config.String("VDB_SITE_URL")).pipe(
  Config.map(Option.map((url) => url.replace(/\/+$/, "")))
)
