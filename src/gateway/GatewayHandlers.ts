import { Context, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { IncomingMessage } from "node:http"
import {
  GatewayInvalidRequest,
  GatewayUnknownProvider,
  RouteNotFound,
  UnsupportedApi,
  UriTooLong
} from "../../schema/GatewayError.ts"
import { compressBody, negotiate } from "../http/Compression.ts"
import { UpstreamClient, type UpstreamRequest } from "../http/UpstreamClient.ts"
import { InferenceLog } from "../inference/InferenceLog.ts"
import { UpstreamCall } from "../metrics/GatewayMetrics.ts"
import { OrgLabel } from "../metrics/OrgLabel.ts"
import { Nonces } from "../nonces/Nonces.ts"
import { spanWhenTraced, TracingOn } from "../observability/Tracing.ts"
import type { Endpoint } from "../providers/catalog/ProviderSpec.ts"
import { ProviderCatalog, routesServing, surfaceOf } from "../providers/ProviderCatalog.ts"
import { segmentTooLong } from "../server/RouteFallback.ts"
import { ROUTER_CONFIG } from "../server/RouterConfig.ts"
import { ProviderKeys } from "../vault/ProviderKeys.ts"
import { dialectOfProvider, type HeaderRecord, makeAdmission, type OrgSource, type RouteParams } from "./Admission.ts"
import { CustomRelay } from "./custom/CustomRelay.ts"
import type { Dialect } from "./dialects/Dialect.ts"
import type { GatewayFailure } from "./dialects/GatewayFailure.ts"
import { type KiroCall, KiroRelay } from "./kiro/KiroRelay.ts"
import { modelList } from "./ModelList.ts"
import { Inspection } from "./pipeline/Inspection.ts"
import { allowVerdict } from "./pipeline/Verdict.ts"
import { countBytes } from "./relay/ByteCounter.ts"
import { clientResponseHeaders, upstreamRequestHeaders } from "./relay/RelayHeaders.ts"
import { isStreaming, parseBody, readBody } from "./relay/RequestBody.ts"
import {
  answering,
  bytesAnswer,
  type Exchange,
  failureAnswer,
  newExchange,
  type RelayAnswer,
  renderFailure
} from "./RelayAnswer.ts"
import { firewallHeaders } from "./ResponseHeaders.ts"

/**
 * What the inference relay reads of a request: the platform's request, or
 * the Node request itself when the relay is answered below the router
 * (`RelayListener.ts`). With a Node request as `source`, the headers and the
 * body are read from it directly.
 */
export type RelayRequest = Pick<HttpServerRequest, "source" | "url" | "headers" | "arrayBuffer">

/** Node's own header record: no copy per request. */
const incomingHeaders = (request: RelayRequest): HeaderRecord =>
  request.source instanceof IncomingMessage ? request.source.headers : request.headers

const queryOf = (url: string): string => {
  const index = url.indexOf("?")
  return index === -1 ? "" : url.slice(index)
}

const invalidCount = new GatewayInvalidRequest({ reason: "count must be an integer from 1 to 64" })
const COUNT = /^[0-9]{1,3}$/

/** `?count=`: an integer 1 to 64, default 16; anything else (out of range, not an integer) is a 400. */
const nonceCount = (url: string): Effect.Effect<number, GatewayInvalidRequest> => {
  const raw = new URLSearchParams(queryOf(url)).get("count")
  if (raw === null) return Effect.succeed(16)
  const count = COUNT.test(raw) ? Number(raw) : 0
  return count >= 1 && count <= 64 ? Effect.succeed(count) : Effect.fail(invalidCount)
}

const dialectOfEndpoint = (endpoint: Endpoint): Dialect =>
  endpoint === "messages" || endpoint === "count_tokens" ? "anthropic" : "openai"

export class GatewayHandlers extends Context.Service<GatewayHandlers>()("vdb/gateway/GatewayHandlers", {
  make: Effect.gen(function*() {
    const catalog = yield* ProviderCatalog
    const providerKeys = yield* ProviderKeys
    const inspection = yield* Inspection
    // With tracing on, the firewall's step before the upstream call (policies, sealed blocks,
    // guardrails; their own spans, e.g. `Guardrails.check`, below); the service key's is `Admission`'s.
    const firewalled = spanWhenTraced(yield* TracingOn, "gateway.firewall")
    const admit = yield* makeAdmission
    const upstream = yield* UpstreamClient
    const inferenceLog = yield* InferenceLog
    const nonces = yield* Nonces
    const custom = yield* CustomRelay
    const kiroRelay = yield* KiroRelay
    const context = yield* Effect.context<never>()
    const orgLabel = yield* OrgLabel

    const relay = Effect.fnUntraced(function*(
      request: RelayRequest,
      params: RouteParams,
      exchange: Exchange,
      endpoint: Endpoint,
      orgSource: OrgSource
    ) {
      const headers = incomingHeaders(request)
      const { orgUuid, provider, route } = yield* admit(exchange, params, headers, orgSource, endpoint)
      const body = yield* readBody(request)
      const { envelope, parsed } = yield* parseBody(body)
      const verdict = yield* firewalled(inspection.inspect({
        requestId: exchange.requestId,
        orgUuid,
        provider,
        endpoint,
        headers,
        body,
        envelope,
        parsed
      }))
      exchange.verdict = verdict
      const providerKey = yield* providerKeys.get(orgUuid, provider.slug)
      const sent = verdict.body ?? body
      const upstreamRequest: UpstreamRequest = {
        provider: provider.slug,
        origin: provider.origin,
        path: provider.upstreamPaths[endpoint]! + queryOf(request.url),
        method: "POST",
        headers: upstreamRequestHeaders(headers, provider, providerKey),
        body: sent
      }
      const logged = endpoint !== "count_tokens" && (yield* inferenceLog.enabled(orgUuid))
      const record = (status: number, responseBytes: number) =>
        inferenceLog.record({
          requestId: exchange.requestId,
          orgUuid,
          provider: provider.slug,
          surface: surfaceOf(endpoint),
          model: envelope.model,
          status,
          latencyMs: performance.now() - exchange.started,
          requestBytes: sent.length,
          responseBytes,
          decision: verdict.decision
        })

      const call = new UpstreamCall(
        context,
        route === undefined ? provider.slug : "custom",
        surfaceOf(endpoint),
        envelope.model,
        orgLabel(orgUuid)
      )
      if (isStreaming(envelope)) {
        const response =
          yield* (route === undefined ? upstream.stream(upstreamRequest) : custom.stream(route, upstreamRequest))
        call.headers(performance.now())
        const out = firewallHeaders(exchange.requestId, verdict, clientResponseHeaders(response.headers, true))
        const relayed = countBytes(response.body, (bytes) => {
          call.end()
          if (logged) Effect.runSync(record(response.status, bytes))
        }, (chunk) => call.chunk(chunk))
        return { status: response.status, headers: out, body: relayed } satisfies RelayAnswer
      }
      const response = yield* (route === undefined
        ? upstream.buffered(upstreamRequest)
        : custom.buffered(route, upstreamRequest))
      call.headers(response.headersAt ?? performance.now())
      call.chunk(response.body)
      call.end()
      const out = firewallHeaders(exchange.requestId, verdict, clientResponseHeaders(response.headers, false))
      if (logged) yield* record(response.status, response.body.length)
      const sentBody = yield* compressBody(negotiate(headers["accept-encoding"]), response.body, out)
      return bytesAnswer(response.status, out, sentBody)
    })

    const listModels = Effect.fnUntraced(function*(
      request: HttpServerRequest,
      params: RouteParams,
      exchange: Exchange,
      orgSource: OrgSource
    ) {
      const headers = incomingHeaders(request)
      const { orgUuid, provider } = yield* admit(exchange, params, headers, orgSource, undefined)
      const models = yield* inspection.visibleModels(orgUuid, provider)
      exchange.verdict = allowVerdict
      const out = firewallHeaders(exchange.requestId, allowVerdict, { "content-type": "application/json" })
      const listing = new TextEncoder().encode(JSON.stringify(modelList(provider, models)))
      const body = yield* compressBody(negotiate(headers["accept-encoding"]), listing, out)
      return HttpServerResponse.uint8Array(body, { headers: out, contentType: "application/json" })
    })

    const issueNonces = Effect.fnUntraced(
      function*(request: HttpServerRequest, params: RouteParams, exchange: Exchange) {
        const { orgUuid, provider } = yield* admit(exchange, params, incomingHeaders(request), "path", undefined)
        const count = yield* nonceCount(request.url)
        yield* inspection.admitProvider(orgUuid, provider)
        const issued = yield* nonces.issue(orgUuid, count)
        return HttpServerResponse.text(JSON.stringify(issued), {
          headers: firewallHeaders(exchange.requestId, undefined),
          contentType: "application/json"
        })
      }
    )

    /** Kiro's native routes: admitted here (provider, surface, service key), served by `KiroRelay`. */
    const kiroRoute = (
      serve: (call: KiroCall) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayFailure>
    ) =>
      Effect.fnUntraced(function*(request: HttpServerRequest, params: RouteParams, exchange: Exchange) {
        const headers = incomingHeaders(request)
        const { orgUuid, provider } = yield* admit(exchange, params, headers, "path", "kiro")
        return yield* serve({ request, headers, query: queryOf(request.url), exchange, orgUuid, provider })
      })
    const kiroGenerate = kiroRoute(kiroRelay.generate)
    const kiroModels = kiroRoute(kiroRelay.listModels)

    return {
      /** `POST /{provider}/{org}/v1/<surface>` and the legacy/org-less forms. */
      inference: (endpoint: Endpoint, orgSource: OrgSource) => (request: RelayRequest, params: RouteParams) => {
        const exchange = newExchange(dialectOfEndpoint(endpoint))
        return answering(exchange, relay(request, params, exchange, endpoint, orgSource), failureAnswer)
      },
      models: (orgSource: OrgSource) => (request: HttpServerRequest, params: RouteParams) => {
        const exchange = newExchange("openai")
        return answering(exchange, listModels(request, params, exchange, orgSource), renderFailure)
      },
      nonces: (request: HttpServerRequest, params: RouteParams) => {
        const exchange = newExchange("openai")
        return answering(exchange, issueNonces(request, params, exchange), renderFailure)
      },
      /** `POST /kiro/{org}/v1/generateAssistantResponse`. */
      kiro: (request: HttpServerRequest, params: RouteParams) => {
        const exchange = newExchange("openai")
        return answering(exchange, kiroGenerate(request, params, exchange), renderFailure)
      },
      /** `GET /kiro/{org}/v1/ListAvailableModels`. */
      kiroModels: (request: HttpServerRequest, params: RouteParams) => {
        const exchange = newExchange("openai")
        return answering(exchange, kiroModels(request, params, exchange), renderFailure)
      },
      /** Any other path: `unknown_provider` unless the first segment is a provider, then `unsupported_api`. */
      fallback: (request: HttpServerRequest) => {
        const slug = request.url.split(/[/?]/)[1] ?? ""
        const provider = catalog.lookup(slug)
        const exchange = newExchange(dialectOfProvider(provider))
        // A segment the router would not read (an organization of 3,000 characters, say) matched no route
        // because of its length: saying the provider does not serve that API would be wrong.
        const failure: GatewayFailure = segmentTooLong(request.url)
          ? new UriTooLong({ limit: ROUTER_CONFIG.maxParamLength! })
          : slug === ""
          ? new RouteNotFound()
          : provider === undefined
          ? new GatewayUnknownProvider({ provider: slug })
          : new UnsupportedApi({ provider: slug, surface: "requested", use: routesServing(provider) })
        return Effect.succeed(renderFailure(exchange, failure))
      }
    }
  })
}) {}
