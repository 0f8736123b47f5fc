import { Config, Context, Effect, Layer, Option, Redacted, Tracer } from "effect"
import { FetchHttpClient, HttpClient, HttpMiddleware, UrlParams } from "effect/http"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"

/**
 * True while spans are exported (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set). The paths answered below the router
 * (`src/gateway/RelayListener.ts`) and the upstream call read it once, when
 * built, so that with tracing off they make no span and send no `traceparent`.
 */
export class TracingOn extends Context.Reference<boolean>("vdb/observability/TracingOn", {
  defaultValue: () => false
}) {}

const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio"
] as const
type Sampler = typeof SAMPLERS[number]

/** OTLP over HTTP only: `grpc` is refused at start-up as a malformed setting. */
const PROTOCOLS = ["http/protobuf", "http/json"] as const

/** The standard `OTEL_*` variables this process reads; the headers stay redacted (they are credentials). */
const TracingConfig = Config.all({
  endpoint: Config.option(Config.String("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
  baseEndpoint: Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT")),
  disabled: Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  headers: Config.option(
    Config.Redacted("OTEL_EXPORTER_OTLP_TRACES_HEADERS").pipe(
      Config.orElse(() => Config.Redacted("OTEL_EXPORTER_OTLP_HEADERS"))
    )
  ),
  protocol: Config.option(
    Config.Literals(PROTOCOLS, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").pipe(
      Config.orElse(() => Config.Literals(PROTOCOLS, "OTEL_EXPORTER_OTLP_PROTOCOL"))
    )
  ),
  sampler: Config.Literals(SAMPLERS, "OTEL_TRACES_SAMPLER").pipe(Config.withDefault<Sampler>("parentbased_always_on")),
  ratio: Config.Number("OTEL_TRACES_SAMPLER_ARG").pipe(Config.withDefault(1)),
  serviceName: Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("vdb"))
})

/** `OTEL_EXPORTER_OTLP_HEADERS`: `name=value,name=value`, values percent-encoded (the OTLP exporter spec). */
const parseHeaders = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const part of text.split(",")) {
    const at = part.indexOf("=")
    if (at <= 0) continue
    out[part.slice(0, at).trim().toLowerCase()] = decodeURIComponent(part.slice(at + 1).trim())
  }
  return out
}

/** The traces URL: the signal endpoint as given, or `/v1/traces` under the base endpoint (the OTLP exporter spec). */
const tracesUrl = (signal: Option.Option<string>, base: Option.Option<string>): string | undefined => {
  if (Option.isSome(signal) && signal.value !== "") return signal.value
  if (Option.isNone(base) || base.value === "") return undefined
  return `${base.value.replace(/\/+$/, "")}/v1/traces`
}

/**
 * `OTEL_TRACES_SAMPLER`: a root span is kept with probability `ratio` for the
 * ratio samplers; `parentbased_*` follow a continued client's sampled flag.
 * Effect's spans inherit their parent's decision, so only roots and remote
 * parents are decided here.
 */
const sampling = (tracer: Tracer.Tracer, sampler: Sampler, ratio: number): Tracer.Tracer => {
  if (sampler === "always_on" || sampler === "parentbased_always_on") {
    return sampler === "always_on" ? withDecision(tracer, () => true, false) : tracer
  }
  const root = sampler.endsWith("always_off") ? () => false : () => Math.random() < ratio
  return withDecision(tracer, root, sampler.startsWith("parentbased_"))
}

const withDecision = (tracer: Tracer.Tracer, root: () => boolean, parentBased: boolean): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      const parent = Option.getOrUndefined(options.parent)
      const decided = parent === undefined || (parent._tag === "ExternalSpan" && !parentBased)
        ? root()
        : parent.sampled
      return tracer.span({ ...options, sampled: options.sampled && decided })
    },
    ...(tracer.context === undefined ? {} : { context: tracer.context })
  })

/**
 * Query-string values never reach a span (`url.full`, `url.query`): a query may
 * carry a key (`?key=`), a device code or a search the operator did not mean to
 * export. Every name matches.
 */
const REDACT_EVERY_QUERY_VALUE: ReadonlyArray<RegExp> = [/^/]

/**
 * Spans over OTLP/HTTP when an endpoint is set; otherwise no exporter, and no
 * `traceparent` on outgoing calls. Request headers are never recorded (the platform's default filter
 * records none); the exporter's own requests are not traced.
 */
export const TracingLayer: Layer.Layer<never, Config.ConfigError> = Layer.unwrap(Effect.gen(function*() {
  const config = yield* TracingConfig
  const url = tracesUrl(config.endpoint, config.baseEndpoint)
  // Off: the platform's HTTP client would still send a `traceparent` of the native tracer's ids.
  if (url === undefined || config.disabled) return Layer.succeed(HttpClient.TracerPropagationEnabled)(false)
  const headers = Option.match(config.headers, {
    onNone: () => undefined,
    onSome: (redacted) => parseHeaders(Redacted.value(redacted))
  })
  const serialization = Option.getOrElse(config.protocol, () => "http/protobuf" as const) === "http/json"
    ? OtlpSerialization.layerJson
    : OtlpSerialization.layerProtobuf
  const tracer = Layer.effect(Tracer.Tracer)(Effect.map(
    OtlpTracer.make({ url, headers, resource: { serviceName: config.serviceName } }),
    (otlp) => sampling(otlp, config.sampler, Math.min(1, Math.max(0, config.ratio)))
  ))
  return Layer.mergeAll(
    tracer,
    Layer.succeed(TracingOn)(true),
    Layer.succeed(UrlParams.CurrentRedactedNames)(REDACT_EVERY_QUERY_VALUE),
    Layer.succeed(HttpMiddleware.TracerHeaderFilter)(() => false)
  ).pipe(Layer.provide(Layer.mergeAll(serialization, OtlpExporter.layerFlusher, FetchHttpClient.layer)))
}))

/**
 * `name`'s span around an effect while tracing is on, decided once when a service is built
 * (`on` is `yield* TracingOn` there). Off, the effect as it is: the hot paths (the relay, the
 * API's authentication) make no span, not even the native tracer's, and pay nothing per request.
 */
export const spanWhenTraced =
  (on: boolean, name: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    on ?
      Effect.withFiber((fiber) =>
        unsampledParent(fiber.context) ? self : Effect.withSpan(self, name, { captureStackTrace: false })
      ) :
      self

/**
 * The current span, when it exists and is not sampled. Below an unsampled span nothing is exported,
 * so the hot paths make no child span there (measured: with 10 % sampling, the 90 % of requests that
 * are not kept paid about a third of the gateway's CPU in spans, stack traces and their garbage).
 * The trace is still continued: the upstream call sends a `traceparent` with the flag cleared.
 */
export const unsampledParent = (context: Context.Context<never>): Tracer.AnySpan | undefined => {
  const parent = Context.getOrUndefined(context, Tracer.ParentSpan)
  return parent !== undefined && !parent.sampled ? parent : undefined
}
