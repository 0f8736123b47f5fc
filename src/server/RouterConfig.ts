import type { FindMyWay } from "effect/http"

/**
 * The router of every service. The default `maxParamLength` (100) turns a
 * longer path parameter into an empty 404 before any middleware runs, so an
 * over-long identifier could be neither authenticated nor answered in the
 * service's dialect; handlers check lengths themselves (the API: 100
 * characters, 400 after authentication). The cap here only bounds the work.
 */
export const ROUTER_CONFIG: Partial<FindMyWay.RouterConfig> = { maxParamLength: 2048 }
