import { Context, Effect, Layer } from "effect"
import {
  type ProviderCredentialInvalid,
  UpstreamBlocked,
  UpstreamRedirect,
  UpstreamTimeout,
  UpstreamUnreachable
} from "../../../schema/GatewayError.ts"
import type { BackendUnavailable } from "../../cache/BackendUnavailable.ts"
import {
  type BufferedResponse,
  type StreamedResponse,
  UpstreamClient,
  type UpstreamRequest
} from "../../http/UpstreamClient.ts"
import { CustomProviders, type CustomRoute } from "../../providers/custom/CustomProviders.ts"
import { makeHostVetting, VettingPolicy } from "../../providers/custom/VettingPolicy.ts"

type Refusal = UpstreamBlocked | UpstreamUnreachable

export interface CustomRelayShape {
  /** The calling organization's custom provider under `slug`, or `undefined` (unknown, or another organization's). */
  lookup(orgUuid: string | undefined, slug: string): Effect.Effect<CustomRoute | undefined, BackendUnavailable>
  /** `ProviderCredentialInvalid`: the stored key is no valid header value (stored before keys were checked). */
  stream(
    route: CustomRoute,
    request: UpstreamRequest
  ): Effect.Effect<StreamedResponse, Refusal | UpstreamRedirect | ProviderCredentialInvalid>
  buffered(
    route: CustomRoute,
    request: UpstreamRequest
  ): Effect.Effect<BufferedResponse, Refusal | UpstreamRedirect | UpstreamTimeout | ProviderCredentialInvalid>
}

const isRedirect = (status: number) => status >= 300 && status < 400

/** No custom provider exists: every lookup misses, so nothing is ever dialled. */
const none: CustomRelayShape = {
  lookup: () => Effect.succeed(undefined),
  stream: (route) => Effect.fail(new UpstreamUnreachable({ provider: route.slug })),
  buffered: (route) => Effect.fail(new UpstreamUnreachable({ provider: route.slug }))
}

/**
 * The request path of custom providers: lookup, then per request one
 * resolution, the vetting of every answer, and a connection to the vetted
 * address itself (the `Host` header and TLS SNI carry the name, and the
 * certificate is checked against the name), over an agent of its own so
 * built-in providers' pools and timings are untouched. A 3xx is never
 * followed: it becomes 502 `upstream_redirect` and its body is dropped.
 *
 * A `Reference` whose default knows no custom provider (fail closed): the
 * compositions that serve only built-in providers (relay tests, benchmarks)
 * work unchanged; `GatewayRoutes` provides `CustomRelay.layer`.
 */
export class CustomRelay extends Context.Reference<CustomRelayShape>("vdb/gateway/custom/CustomRelay", {
  defaultValue: () => none
}) {
  /** Needs `CustomProviders`, `Resolver` and `VettingPolicy`. */
  static readonly layer = Layer.effect(
    CustomRelay,
    Effect.gen(function*() {
      const providers = yield* CustomProviders
      const vet = yield* makeHostVetting
      const policy = yield* VettingPolicy
      const client = yield* UpstreamClient.make({ ca: policy.ca })

      const pinned = (route: CustomRoute, request: UpstreamRequest): Effect.Effect<UpstreamRequest, Refusal> => {
        const blocked = (reason: string) =>
          Effect.logWarning("custom provider refused: non-public address").pipe(
            Effect.annotateLogs({ provider: route.slug, reason }),
            Effect.andThen(Effect.fail(new UpstreamBlocked({ provider: route.slug })))
          )
        if (!route.origin.startsWith("https://")) return blocked("not https")
        return vet(route.custom.hostname).pipe(
          Effect.catchTag("ResolveFailed", () => Effect.fail(new UpstreamUnreachable({ provider: route.slug }))),
          Effect.flatMap((verdict) => {
            if (verdict._tag === "Refused") return blocked(verdict.reason)
            const { family, text } = verdict.address
            return Effect.succeed({
              ...request,
              origin: `https://${family === 6 ? `[${text}]` : text}:${route.custom.port}`,
              // undici takes SNI from `Host`, and TLS checks the certificate against SNI: the name, never the address.
              headers: { ...request.headers, host: route.custom.host }
            })
          })
        )
      }

      return {
        lookup: providers.lookup,
        stream: (route, request) =>
          Effect.flatMap(pinned(route, request), (sent) =>
            Effect.flatMap(client.stream(sent), (response) => {
              if (!isRedirect(response.status)) return Effect.succeed(response)
              response.body.destroy()
              return Effect.fail(new UpstreamRedirect({ provider: route.slug }))
            })),
        buffered: (route, request) =>
          Effect.flatMap(
            pinned(route, request),
            (sent) =>
              Effect.flatMap(client.buffered(sent), (response) =>
                isRedirect(response.status)
                  ? Effect.fail(new UpstreamRedirect({ provider: route.slug }))
                  : Effect.succeed(response))
          )
      } satisfies CustomRelayShape
    })
  )
}
