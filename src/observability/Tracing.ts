import { Config, Context, Effect, Layer, Option, Redacted, References, Tracer } from "effect"
import { Hex } from "effect/encoding"
import { FetchHttpClient, HttpClient, HttpMiddleware, HttpTraceContext, UrlParams } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"
import { layerTraceProtobuf } from "./OtlpTraceProtobuf.ts"

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
 * The sampling decision for a span with no parent in this process (`parent` undefined) or a
 * client's (a remote `ExternalSpan`), as the tracer below makes it: what a caller asks before
 * making any span (`src/gateway/RelayListener.ts`), so that a request that will not be kept
 * makes no span object at all. A span made after asking carries `DECIDED` and is not decided again.
 */
export class RootSampler extends Context.Reference<(parent: Tracer.ExternalSpan | undefined) => boolean>(
  "vdb/observability/RootSampler",
  { defaultValue: () => (parent) => parent === undefined || parent.sampled }
) {}

/** A span's annotations saying its sampling was decided by `RootSampler` before it was made. */
const Decided = Context.Reference<boolean>("vdb/observability/Decided", { defaultValue: () => false })
export const DECIDED: Context.Context<never> = Context.make(Decided, true)

/**
 * `OTEL_TRACES_SAMPLER`: a root span is kept with probability `ratio` for the
 * ratio samplers; `parentbased_*` follow a continued client's sampled flag.
 * Effect's spans inherit their parent's decision, so only roots and remote
 * parents are decided here. A remote parent that is not sampled is never kept
 * (Effect makes its children unsampled before asking the tracer).
 */
const rootDecision = (sampler: Sampler, ratio: number): (parent: Tracer.ExternalSpan | undefined) => boolean => {
  if (sampler === "always_on" || sampler === "parentbased_always_on") {
    return (parent) => parent === undefined || parent.sampled
  }
  const root = sampler.endsWith("always_off") ? () => false : () => Math.random() < ratio
  return sampler.startsWith("parentbased_")
    ? (parent) => parent === undefined ? root() : parent.sampled
    : (parent) => (parent === undefined || parent.sampled) && root()
}

/** Each router request's sampling decision, and whether the next server span is a kept request's (`requestSampler`). */
const decisions = new WeakMap<HttpServerRequest, UnsampledRequest | "kept">()
let keptRequestPending = false

const sampling = (tracer: Tracer.Tracer, decide: (parent: Tracer.ExternalSpan | undefined) => boolean) =>
  Tracer.make({
    span(options) {
      const parent = Option.getOrUndefined(options.parent)
      // A span below one of this process's spans follows it (Effect already set `sampled` from it).
      if (parent?._tag === "Span" || Context.get(options.annotations, Decided)) return tracer.span(options)
      // The platform's request span of a request `requestSampler` just kept: decided once, not twice.
      if (keptRequestPending && options.kind === "server") {
        keptRequestPending = false
        return tracer.span(options)
      }
      return tracer.span({ ...options, sampled: options.sampled && decide(parent) })
    },
    ...(tracer.context === undefined ? {} : { context: tracer.context })
  })

/**
 * The request span of a request the sampler did not keep: no span object, no attributes, no
 * timing, no export, only what continues the trace (its id, the upstream's `traceparent`
 * with the flag cleared, the access log's `traceId`). A client's trace keeps its id; otherwise
 * a fresh one. Its span id is made only if something asks (a child's parent id, never exported).
 */
export class UnsampledRequest implements Tracer.ExternalSpan {
  readonly _tag = "ExternalSpan"
  readonly sampled = false
  readonly annotations: Context.Context<never> = Context.empty()
  readonly traceId: string
  private id: string | undefined
  constructor(traceId: string | undefined) {
    this.traceId = traceId ?? Hex.random(32)
  }
  get spanId(): string {
    return this.id ??= Hex.random(16)
  }
}

/**
 * The router's requests (every route but the gateway's inference ones, `src/gateway/RelayListener.ts`):
 * the platform's tracer middleware asks `HttpMiddleware.TracerDisabledWhen` before it makes a request's
 * span, so the sampler is asked there, once per request. A request it does not keep makes no span: its
 * `UnsampledRequest` (`unsampledRequestOf`) is the parent the access log's middleware provides, so what
 * runs below is not kept either and the trace is still continued. A kept request gets the platform's
 * span, which the tracer above (`keptRequestPending`) does not decide again: the platform makes it
 * synchronously, right after asking, and makes no other server span.
 */
const requestSampler =
  (decide: (parent: Tracer.ExternalSpan | undefined) => boolean) => (request: HttpServerRequest): boolean => {
    let decision = decisions.get(request)
    if (decision === undefined) {
      const parent = Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers))
      decision = decide(parent) ? "kept" : new UnsampledRequest(parent?.traceId)
      decisions.set(request, decision)
    }
    keptRequestPending = decision === "kept"
    return decision !== "kept"
  }

/** The parent of a router request the sampler did not keep (`requestSampler`), else undefined. */
export const unsampledRequestOf = (request: HttpServerRequest): UnsampledRequest | undefined => {
  const decision = decisions.get(request)
  return decision === "kept" ? undefined : decision
}

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
  if (url === undefined || config.disabled) {
    return Layer.mergeAll(
      // Off: the platform's HTTP client would still send a `traceparent` of the native tracer's ids.
      Layer.succeed(HttpClient.TracerPropagationEnabled)(false),
      // Off, every span would go to the native tracer, which exports nothing: the platform's span for each
      // router request (with its clock reads and a fresh fiber context), each SQL statement's. None is made.
      Layer.succeed(References.TracerEnabled)(false)
    )
  }
  const headers = Option.match(config.headers, {
    onNone: () => undefined,
    onSome: (redacted) => parseHeaders(Redacted.value(redacted))
  })
  const serialization = Option.getOrElse(config.protocol, () => "http/protobuf" as const) === "http/json"
    ? OtlpSerialization.layerJson
    : layerTraceProtobuf
  const decide = rootDecision(config.sampler, Math.min(1, Math.max(0, config.ratio)))
  const tracer = Layer.effect(Tracer.Tracer)(Effect.map(
    OtlpTracer.make({ url, headers, resource: { serviceName: config.serviceName } }),
    (otlp) => sampling(otlp, decide)
  ))
  return Layer.mergeAll(
    tracer,
    Layer.succeed(TracingOn)(true),
    Layer.succeed(RootSampler)(decide),
    Layer.succeed(HttpMiddleware.TracerDisabledWhen)(requestSampler(decide)),
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
