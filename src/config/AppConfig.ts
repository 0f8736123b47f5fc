import { Config } from "effect"

/** Where the embedded mode keeps everything: `pglite/`, `master.key`, `admin.sock`. */
export const DataDir = Config.String("VDB_DATA_DIR").pipe(Config.withDefault(".data"))

/** Set: real PostgreSQL. Unset: embedded PGlite under the data directory. */
export const DatabaseUrl = Config.option(Config.Redacted("DATABASE_URL"))

/** Size of the PostgreSQL connection pool (PGlite always uses exactly 1). */
export const DatabasePoolSize = Config.Int("VDB_DATABASE_POOL_SIZE").pipe(Config.withDefault(10))

/** Base64 of 32 bytes; encrypts every stored secret. */
export const MasterKeyB64 = Config.option(Config.Redacted("VDB_MASTER_KEY"))

/** Retired master keys (comma-separated base64), still accepted for decryption during rotation. */
export const RetiredMasterKeysB64 = Config.option(Config.Redacted("VDB_MASTER_KEYS_RETIRED"))

export const Host = Config.String("VDB_HOST").pipe(Config.withDefault("127.0.0.1"))

/** `VDB_HOST` as a URL's host for a client on this machine: a wildcard listen address as loopback, IPv6 in brackets. */
export const urlHostOf = (host: string) => {
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host
  return reachable.includes(":") ? `[${reachable}]` : reachable
}

export const ServicePorts = Config.all({
  api: Config.Port("VDB_API_PORT").pipe(Config.withDefault(8080)),
  gateway: Config.Port("VDB_GATEWAY_PORT").pipe(Config.withDefault(8081)),
  site: Config.Port("VDB_SITE_PORT").pipe(Config.withDefault(8082)),
  mcp: Config.Port("VDB_MCP_PORT").pipe(Config.withDefault(8083))
})
export type ServicePorts = Config.Success<typeof ServicePorts>

export const LogLevel = Config.LogLevel("VDB_LOG_LEVEL").pipe(Config.withDefault("Info" as const))
