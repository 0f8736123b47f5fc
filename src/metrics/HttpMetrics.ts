import { type Context, Metric } from "effect"

/**
 * Request duration buckets, in seconds: from a fast cached lookup (well under
 * a millisecond) to a long streamed inference answer.
 */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

/** Methods named in labels; any other method is `other`, so a client cannot add series. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const
/** A request no route matched: one label value, never the raw path. */
export const UNMATCHED_ROUTE = "unmatched"

const statusClassIndex = (status: number) => {
  const index = Math.floor(status / 100) - 1
  return index >= 0 && index < 5 ? index : 4
}

type Series = Array<Metric.Histogram<number> | undefined>

/**
 * Records one finished request of a service in `vdb_http_request_duration_seconds`
 * (its `_count` is the request count) by route template, method and status
 * class. The histograms are built once per label set and kept in nested maps,
 * so a request costs two map lookups, an array read and the histogram update:
 * no label object, key string or context is allocated per request. Route
 * templates come from the services' routers, so their number is bounded.
 */
export const httpRequestRecorder = (service: string) => {
  const byRoute = new Map<string, Map<string, Series>>()
  const histogram = (route: string, method: string, statusClass: number) =>
    Metric.histogram("vdb_http_request_duration_seconds", {
      description: "HTTP requests by service, route template, method and status class, and their duration",
      boundaries: DURATION_BUCKETS,
      attributes: { service, route, method, status_class: STATUS_CLASSES[statusClass]! }
    })
  // Two answers operators watch on their own: a conditional request answered without a body,
  // and a refusal for a rate limit. Looked up only when a request gets one of them.
  const notable = (id: string, description: string) => {
    const byRoute = new Map<string, Metric.Counter<number>>()
    return (route: string) => {
      let counter = byRoute.get(route)
      if (counter === undefined) {
        byRoute.set(
          route,
          counter = Metric.counter(id, { description, incremental: true, attributes: { service, route } })
        )
      }
      return counter
    }
  }
  const notModified = notable("vdb_http_not_modified_total", "304 Not Modified answers by service and route template")
  const rateLimited = notable(
    "vdb_http_rate_limited_total",
    "429 Too Many Requests answers by service and route template (on the gateway's relay routes, a provider's 429 too)"
  )
  return (context: Context.Context<never>, route: string, rawMethod: string, status: number, seconds: number): void => {
    const method = METHODS.has(rawMethod) ? rawMethod : "other"
    let byMethod = byRoute.get(route)
    if (byMethod === undefined) byRoute.set(route, byMethod = new Map())
    let series = byMethod.get(method)
    if (series === undefined) byMethod.set(method, series = [undefined, undefined, undefined, undefined, undefined])
    const statusClass = statusClassIndex(status)
    const metric = series[statusClass] ??= histogram(route, method, statusClass)
    metric.updateUnsafe(seconds, context)
    if (status === 304) notModified(route).updateUnsafe(1, context)
    else if (status === 429) rateLimited(route).updateUnsafe(1, context)
  }
}

const inFlight = Metric.gauge("vdb_http_requests_in_flight", {
  description: "HTTP requests of a service whose response has not closed yet"
})

/**
 * `vdb_http_requests_in_flight{service}`, read from the server's own count
 * when metrics are scraped (nothing is done per request). Returns the
 * registration, to remove when the service stops.
 */
export const registerInFlight = (
  service: string,
  server: { readonly inFlight: number },
  context: Context.Context<never>
): Metric.Registration =>
  Metric.registerUnsafe(Metric.withAttributes(inFlight, { service }), context, {
    get: () => ({ value: server.inFlight }),
    update: () => {},
    modify: () => {}
  })
