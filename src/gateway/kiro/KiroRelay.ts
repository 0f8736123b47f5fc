import { Context, Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { UpstreamUnreachable } from "../../../schema/GatewayError.ts"
import { compressBody, negotiate } from "../../http/Compression.ts"
import { UpstreamClient } from "../../http/UpstreamClient.ts"
import { InferenceLog, type StreamRecord } from "../../inference/InferenceLog.ts"
import { UpstreamCall } from "../../metrics/GatewayMetrics.ts"
import { OrgLabel } from "../../metrics/OrgLabel.ts"
import { KiroTokens } from "../../providers/kiro/KiroTokens.ts"
import type { Provider } from "../../providers/ProviderCatalog.ts"
import type { GatewayFailure } from "../dialects/GatewayFailure.ts"
import { Inspection } from "../pipeline/Inspection.ts"
import { allowVerdict, type Verdict } from "../pipeline/Verdict.ts"
import { countBytes } from "../relay/ByteCounter.ts"
import { clientResponseHeaders, upstreamRequestHeaders } from "../relay/RelayHeaders.ts"
import { readBody } from "../relay/RequestBody.ts"
import { firewallHeaders } from "../ResponseHeaders.ts"
import { tapEventStream } from "./EventStreamTap.ts"
import { filterListing, offeredModels } from "./KiroModelList.ts"
import { parseKiroBody, queryWithProfileArn, withProfileArn } from "./KiroRequest.ts"

type HeaderRecord = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** The per-request state `GatewayHandlers` keeps, so a refusal carries the firewall headers. */
export interface KiroExchange {
  readonly requestId: string
  readonly started: number
  verdict: Verdict | undefined
}

/** An admitted call: the route's provider serves Kiro and the caller's service key checked out. */
export interface KiroCall {
  readonly request: HttpServerRequest
  readonly headers: HeaderRecord
  /** `?...` of the client's URL, or "". */
  readonly query: string
  readonly exchange: KiroExchange
  readonly orgUuid: string
  readonly provider: Provider
}

const GENERATE = "/generateAssistantResponse"
const LIST_MODELS = "/ListAvailableModels"
const EVENT_STREAM = "application/vnd.amazon.eventstream"

/** The base path the catalog resolved (`VDB_PROVIDER_KIRO_BASE_URL`), for Kiro's second native path. */
const listModelsPath = (provider: Provider): string => {
  const generate = provider.upstreamPaths.kiro ?? GENERATE
  return generate.slice(0, generate.length - GENERATE.length) + LIST_MODELS
}

const isEventStream = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>): boolean => {
  const type = headers["content-type"]
  return typeof type === "string" && type.toLowerCase().startsWith(EVENT_STREAM)
}

/** A 2xx listing the gateway cannot read cannot be filtered: never shown unfiltered. */
const unreadableListing = new UpstreamUnreachable({ provider: "kiro" })

/**
 * Kiro's native surface (spec 2): `generateAssistantResponse` goes through
 * the firewall (guardrails and policy on `conversationState`), then upstream
 * with a token minted from the vault's sign-in; the event stream comes back
 * byte for byte, decoded on the side for the inference log.
 * `ListAvailableModels` is upstream's live list less what the model policy
 * refuses.
 */
export class KiroRelay extends Context.Service<KiroRelay, {
  generate(call: KiroCall): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayFailure>
  listModels(call: KiroCall): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayFailure>
}>()("vdb/gateway/kiro/KiroRelay") {
  static readonly make = Effect.gen(function*() {
    const inspection = yield* Inspection
    const upstream = yield* UpstreamClient
    const inferenceLog = yield* InferenceLog
    const tokens = yield* KiroTokens
    const context = yield* Effect.context<never>()
    const orgLabel = yield* OrgLabel

    const generate = Effect.fnUntraced(function*(call: KiroCall) {
      const { exchange, headers, orgUuid, provider } = call
      const body = yield* readBody(call.request)
      const { envelope, parsed } = yield* parseKiroBody(body)
      const verdict = yield* inspection.inspect({
        requestId: exchange.requestId,
        orgUuid,
        provider,
        endpoint: "kiro",
        headers,
        body,
        envelope,
        parsed
      })
      exchange.verdict = verdict
      const access = yield* tokens.access(orgUuid)
      const sent = withProfileArn(verdict.body ?? body, parsed, access.profileArn)
      // In the upstream histograms as provider and surface `kiro`. Its stream reports credits,
      // not OpenAI's or Anthropic's `usage`, so no tokens are read from it.
      const timing = new UpstreamCall(context, "kiro", "kiro", envelope.model, orgLabel(orgUuid))
      const response = yield* upstream.stream({
        provider: provider.slug,
        origin: provider.origin,
        path: (provider.upstreamPaths.kiro ?? GENERATE) + call.query,
        method: "POST",
        headers: upstreamRequestHeaders(headers, provider, access.token),
        body: sent
      })
      timing.headers(performance.now())
      // Revoked or expired early: mint another next time rather than fail until the cached expiry.
      if (response.status === 401 || response.status === 403) yield* tokens.invalidate(orgUuid, access.token)
      const out = firewallHeaders(exchange.requestId, verdict, clientResponseHeaders(response.headers, true))
      if (!(yield* inferenceLog.enabled(orgUuid))) {
        return HttpServerResponse.raw(countBytes(response.body, () => timing.end()), {
          status: response.status,
          headers: out
        })
      }
      const record = (responseBytes: number, stream: StreamRecord | undefined) => {
        timing.end()
        Effect.runSync(inferenceLog.record({
          requestId: exchange.requestId,
          orgUuid,
          provider: provider.slug,
          surface: "kiro",
          model: envelope.model,
          status: response.status,
          latencyMs: performance.now() - exchange.started,
          requestBytes: sent.length,
          responseBytes,
          decision: verdict.decision,
          stream
        }))
      }
      const relayed = isEventStream(response.headers)
        ? tapEventStream(response.body, record)
        : countBytes(response.body, (bytes) => record(bytes, undefined))
      return HttpServerResponse.raw(relayed, { status: response.status, headers: out })
    })

    const listModels = Effect.fnUntraced(function*(call: KiroCall) {
      const { exchange, headers, orgUuid, provider } = call
      // An explicit provider deny refuses before any token is minted.
      yield* inspection.admitProvider(orgUuid, provider)
      const access = yield* tokens.access(orgUuid)
      const response = yield* upstream.buffered({
        provider: provider.slug,
        origin: provider.origin,
        path: listModelsPath(provider) + queryWithProfileArn(call.query, access.profileArn),
        method: "GET",
        headers: upstreamRequestHeaders(headers, provider, access.token),
        body: undefined
      })
      if (response.status === 401 || response.status === 403) yield* tokens.invalidate(orgUuid, access.token)
      exchange.verdict = allowVerdict
      const out = firewallHeaders(exchange.requestId, allowVerdict, clientResponseHeaders(response.headers, false))
      if (response.status < 200 || response.status > 299) {
        return HttpServerResponse.uint8Array(response.body, { status: response.status, headers: out })
      }
      let listing: unknown
      try {
        listing = JSON.parse(response.body.toString())
      } catch {
        return yield* unreadableListing
      }
      if (typeof listing !== "object" || listing === null || Array.isArray(listing)) return yield* unreadableListing
      const live = listing as Record<string, unknown>
      const visible = yield* inspection.visibleModels(orgUuid, {
        ...provider,
        spec: { ...provider.spec, models: offeredModels(live) }
      })
      out["content-type"] = "application/json"
      const filtered = new TextEncoder().encode(JSON.stringify(filterListing(live, new Set(visible))))
      const sent = yield* compressBody(negotiate(headers["accept-encoding"]), filtered, out)
      return HttpServerResponse.uint8Array(sent, { status: response.status, headers: out })
    })

    return KiroRelay.of({ generate, listModels })
  })

  /** Needs `Inspection`, `UpstreamClient`, `InferenceLog`, `ProviderKeys` (the sign-ins) and Kiro's auth config. */
  static readonly layer = Layer.effect(KiroRelay)(KiroRelay.make).pipe(Layer.provide(KiroTokens.layer))
}
