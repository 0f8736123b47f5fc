import { Config, Option } from "effect"
import { Host, ServicePorts, urlHostOf } from "../config/AppConfig.ts"

/**
 * `VDB_SITE_URL`: the site's public origin (e.g. `https://vdb.example`), used
 * for `verification_uri`, the same-origin check and the cookies' `Secure`
 * flag. Unset: the origin the request was addressed to (`http://` + Host),
 * which is right for a site served directly on loopback or a LAN.
 */
export const SiteUrl = Config.option(Config.String("VDB_SITE_URL")).pipe(
  Config.map(Option.map((url) => url.replace(/\/+$/, "")))
)

/**
 * Where the site is: `VDB_SITE_URL` when set, and its own listening address (`VDB_HOST:VDB_SITE_PORT`,
 * a wildcard host named as loopback), which answers name when the request's Host is not a valid
 * `host[:port]`.
 */
export const SiteAddress = Config.all({ configured: SiteUrl, host: Host, ports: ServicePorts }).pipe(
  Config.map(({ configured, host, ports }) => ({ configured, own: `${urlHostOf(host)}:${ports.site}` }))
)
