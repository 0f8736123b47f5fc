import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { AnthropicErrorEnvelope, OpenAiErrorEnvelope } from "../../schema/GatewayErrorEnvelope.ts"
import { AnthropicModelList, OpenAiModelList } from "../../schema/GatewayRequest.ts"

/**
 * The gateway's contract (spec 2): every route of the gateway port as an
 * HttpApi, from which the routes, the OpenAPI document at `/openapi.json` and
 * a typed client are derived. Imports nothing from server code.
 *
 * Inference routes are implemented with raw handlers: the body the schemas
 * describe here is never decoded by the framework, so the relay forwards the
 * client's exact bytes (the gateway reads only the envelope: `model`,
 * `stream`). Errors leave in the envelope of the route called, whatever the
 * provider behind it speaks.
 */

/** Every status a gateway route can answer with instead of the provider's response. */
const ERROR_STATUSES = [400, 401, 403, 404, 413, 415, 500, 501, 502, 503] as const

const errorsIn = <S extends Schema.Top>(envelope: S) =>
  ERROR_STATUSES.map((code) => envelope.pipe(HttpApiSchema.status(code)))

/** `{error:{message,type,code}}`: chat, responses, Kiro. */
export const OpenAiErrors = errorsIn(OpenAiErrorEnvelope)
/** `{type:"error", error:{type,code,message}}`: messages, count_tokens. */
export const AnthropicErrors = errorsIn(AnthropicErrorEnvelope)

/** The provider's own request body, forwarded byte for byte. */
export const ProviderRequest = Schema.Record(Schema.String, Schema.Unknown).annotate({
  identifier: "ProviderRequest",
  description:
    "The provider's own request body (JSON object, at most 8 MiB), forwarded unchanged unless a guardrail redacts or a strip rule removes a tool. The gateway reads `model` and `stream`."
})

/** The provider's own response, relayed as received (SSE when the request asked to stream). */
export const ProviderResponse = Schema.Record(Schema.String, Schema.Unknown).annotate({
  identifier: "ProviderResponse",
  description:
    "The provider's response, relayed unchanged (`text/event-stream` when `stream` is true). Non-streaming responses are compressed when `Accept-Encoding` allows gzip or br."
})

const ProviderOrg = { provider: Schema.String, org: Schema.String }
const ProviderOnly = { provider: Schema.String }

const relay = <const Id extends string, const Path extends `/${string}`, P extends Schema.Struct.Fields>(
  id: Id,
  path: Path,
  params: P,
  error: typeof OpenAiErrors | typeof AnthropicErrors
) => HttpApiEndpoint.post(id, path, { params, payload: ProviderRequest, success: ProviderResponse, error })

/** OpenAI-dialect inference surfaces. */
export class OpenAiSurfaces extends HttpApiGroup.make("openai")
  .add(
    relay("chat", "/:provider/:org/v1/chat/completions", ProviderOrg, OpenAiErrors),
    relay("responses", "/:provider/:org/v1/responses", ProviderOrg, OpenAiErrors),
    // Legacy form: the organization in `X-Organisation-UUID`.
    relay("chatLegacy", "/:provider/v1/chat/completions", ProviderOnly, OpenAiErrors),
    // No organization: always 401 `invalid_api_key`, kept so the answer is in the route's dialect.
    relay("responsesNoOrg", "/:provider/v1/responses", ProviderOnly, OpenAiErrors)
  )
  .annotateMerge(OpenApi.annotations({ title: "OpenAI surfaces", description: "Chat completions and responses." }))
{}

/** Anthropic-dialect inference surfaces. */
export class AnthropicSurfaces extends HttpApiGroup.make("anthropic")
  .add(
    relay("messages", "/:provider/:org/v1/messages", ProviderOrg, AnthropicErrors),
    relay("countTokens", "/:provider/:org/v1/messages/count_tokens", ProviderOrg, AnthropicErrors),
    relay("messagesNoOrg", "/:provider/v1/messages", ProviderOnly, AnthropicErrors),
    relay("countTokensNoOrg", "/:provider/v1/messages/count_tokens", ProviderOnly, AnthropicErrors)
  )
  .annotateMerge(OpenApi.annotations({ title: "Anthropic surfaces", description: "Messages and token counting." }))
{}

/** Issued sealed-block nonces (spec 2, "Sealed blocks"). */
export const IssuedNonces = Schema.Struct({
  nonces: Schema.Array(Schema.String),
  count: Schema.Number,
  expires_at: Schema.String
}).annotate({ identifier: "IssuedNonces" })

/** Listings speak the provider's main surface: either envelope, either list shape. */
const ListingErrors = [...OpenAiErrors, ...AnthropicErrors]

export class Listings extends HttpApiGroup.make("listings")
  .add(
    HttpApiEndpoint.get("models", "/:provider/:org/v1/models", {
      params: ProviderOrg,
      success: Schema.Union([OpenAiModelList, AnthropicModelList]),
      error: ListingErrors
    }),
    HttpApiEndpoint.get("modelsNoOrg", "/:provider/v1/models", {
      params: ProviderOnly,
      success: Schema.Union([OpenAiModelList, AnthropicModelList]),
      error: ListingErrors
    }),
    HttpApiEndpoint.get("nonces", "/:provider/:org/v1/nonces", {
      params: ProviderOrg,
      // Strings (repeated: the first counts), so any query reaches the handler: a malformed count is the dialect's 400.
      query: {
        count: Schema.optional(Schema.Union([Schema.String, Schema.Array(Schema.String)])).annotate({
          description: "An integer from 1 to 64; default 16"
        })
      },
      success: IssuedNonces,
      error: ListingErrors
    })
  )
  .annotateMerge(
    OpenApi.annotations({ title: "Listings", description: "Models visible to the caller; sealed-block nonces." })
  )
{}

/**
 * Kiro's native surface: `generateAssistantResponse` answers
 * `application/vnd.amazon.eventstream`, relayed byte for byte; the gateway
 * mints the provider token from the vault's sign-in. `ListAvailableModels`
 * is upstream's live list filtered by the model policy.
 */
export class KiroSurface extends HttpApiGroup.make("kiro")
  .add(
    relay("generateAssistantResponse", "/:provider/:org/v1/generateAssistantResponse", ProviderOrg, OpenAiErrors),
    HttpApiEndpoint.get("listAvailableModels", "/:provider/:org/v1/ListAvailableModels", {
      params: ProviderOrg,
      success: ProviderResponse,
      error: OpenAiErrors
    })
  )
{}

export class GatewayApi extends HttpApi.make("gateway")
  .add(OpenAiSurfaces)
  .add(AnthropicSurfaces)
  .add(Listings)
  .add(KiroSurface)
  .annotateMerge(OpenApi.annotations({
    title: "vdb AI gateway",
    description:
      "Relays provider APIs under /{provider}/{org}/v1/… with the organization's service key (Authorization: Bearer, or x-api-key). Errors use the envelope of the route called."
  }))
{}
