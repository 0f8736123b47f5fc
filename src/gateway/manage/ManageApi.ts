import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { CheckRequest, FirewallCheckResult } from "../../../schema/FirewallCheck.ts"
import { GatewayPolicyEntry, NewPolicyEntry } from "../../../schema/GatewayPolicy.ts"
import { GuardrailRule, GuardrailRulePatch, NewGuardrailRule } from "../../../schema/GuardrailRule.ts"
import { CustomProvider, NewCustomProvider } from "../../providers/custom/CustomProvider.ts"
import {
  ManageInvalidRequestBody,
  ManageNotFoundBody,
  ManageUnavailableBody,
  ManageUnsupportedMediaTypeBody
} from "./ManageErrors.ts"
import { ManageAuthentication, ManageFailures, ManageValidation } from "./ManageSecurity.ts"

/**
 * The gateway's management API (`/manage/v1/...` on the gateway port): one
 * organization's guardrail rules, policy entries, provider keys,
 * inference-log switch and custom providers, authenticated with that organization's
 * vulnerability-API credential. The contract alone: handlers live in
 * `ManageHandlers.ts`, the typed client in `ManageClient.ts`.
 */

const RuleUuid = { uuid: Schema.String }

export const RuleList = Schema.Struct({ data: Schema.Array(GuardrailRule) })
export const PolicyList = Schema.Struct({ data: Schema.Array(GatewayPolicyEntry) })

export const ProviderKeyListing = Schema.Struct({
  provider: Schema.String,
  created_at: Schema.DateTimeUtcFromString,
  updated_at: Schema.DateTimeUtcFromString
})
export const ProviderKeyList = Schema.Struct({ data: Schema.Array(ProviderKeyListing) })

/** Write-only: the key goes in and never comes out (`Redacted` on both ends, so no log shows it). */
export const ProviderKeyInput = Schema.Struct({ key: Schema.RedactedFromValue(Schema.String) })

export const InferenceLogSetting = Schema.Struct({ enabled: Schema.Boolean })

const Created = <S extends Schema.Top>(schema: S) => schema.pipe(HttpApiSchema.status(201))

export class GuardrailsApi extends HttpApiGroup.make("guardrails").add(
  HttpApiEndpoint.get("list", "/guardrails", { success: RuleList })
    .annotate(
      OpenApi.Description,
      "The organization's guardrail rules in priority order; `compiles: false` marks a stored pattern RE2 refuses (it enforces nothing)."
    ),
  HttpApiEndpoint.post("create", "/guardrails", {
    payload: NewGuardrailRule,
    success: Created(GuardrailRule),
    error: ManageInvalidRequestBody
  }).annotate(
    OpenApi.Description,
    "Create a rule. 400 with the compiler's message for a pattern RE2 does not compile."
  ),
  HttpApiEndpoint.post("check", "/guardrails/check", {
    payload: CheckRequest,
    success: FirewallCheckResult,
    error: [ManageInvalidRequestBody, ManageUnavailableBody]
  }).annotate(
    OpenApi.Description,
    "Dry run: the decision and matched rule names for one text (and, with `provider`, the provider policy). Changes nothing; never echoes the text."
  ),
  HttpApiEndpoint.get("show", "/guardrails/:uuid", {
    params: RuleUuid,
    success: GuardrailRule,
    error: [ManageInvalidRequestBody, ManageNotFoundBody]
  }),
  HttpApiEndpoint.patch("update", "/guardrails/:uuid", {
    params: RuleUuid,
    payload: GuardrailRulePatch,
    success: GuardrailRule,
    error: [ManageInvalidRequestBody, ManageNotFoundBody]
  }).annotate(OpenApi.Description, "Change some fields of a rule; the type is fixed at creation."),
  HttpApiEndpoint.post("enable", "/guardrails/:uuid/enable", {
    params: RuleUuid,
    success: GuardrailRule,
    error: [ManageInvalidRequestBody, ManageNotFoundBody]
  }),
  HttpApiEndpoint.post("disable", "/guardrails/:uuid/disable", {
    params: RuleUuid,
    success: GuardrailRule,
    error: [ManageInvalidRequestBody, ManageNotFoundBody]
  }),
  HttpApiEndpoint.delete("remove", "/guardrails/:uuid", {
    params: RuleUuid,
    success: HttpApiSchema.NoContent,
    error: [ManageInvalidRequestBody, ManageNotFoundBody]
  })
) {}

export class PoliciesApi extends HttpApiGroup.make("policies").add(
  HttpApiEndpoint.get("list", "/policies", { success: PolicyList })
    .annotate(
      OpenApi.Description,
      "Allow, deny and strip entries for providers, models, tools, MCP servers, skills and clients."
    ),
  HttpApiEndpoint.post("add", "/policies", {
    payload: NewPolicyEntry,
    success: Created(GatewayPolicyEntry),
    error: [ManageInvalidRequestBody, ManageUnavailableBody]
  }).annotate(
    OpenApi.Description,
    "Add an entry. `effect` is allow, deny or strip (strip: tool and mcp only); `model` entries name their provider, `provider` entries never do. A provider slug (value or scope) must be a built-in provider or one of the organization's custom providers: 400 `unknown_provider` otherwise."
  ),
  HttpApiEndpoint.delete("remove", "/policies/:uuid", {
    params: RuleUuid,
    success: HttpApiSchema.NoContent,
    error: [ManageInvalidRequestBody, ManageNotFoundBody]
  })
) {}

export class ProviderKeysApi extends HttpApiGroup.make("providerKeys").add(
  HttpApiEndpoint.get("list", "/provider-keys", { success: ProviderKeyList })
    .annotate(OpenApi.Description, "The providers that have a stored key, with timestamps. Never a key."),
  HttpApiEndpoint.put("set", "/provider-keys/:provider", {
    params: { provider: Schema.String },
    payload: ProviderKeyInput,
    success: HttpApiSchema.NoContent,
    error: [ManageInvalidRequestBody, ManageUnavailableBody]
  }).annotate(OpenApi.Description, "Store (or replace) the provider's key, sealed under the master key. Write-only."),
  HttpApiEndpoint.delete("remove", "/provider-keys/:provider", {
    params: { provider: Schema.String },
    success: HttpApiSchema.NoContent,
    error: [ManageInvalidRequestBody, ManageNotFoundBody, ManageUnavailableBody]
  })
) {}

export class InferenceLogApi extends HttpApiGroup.make("inferenceLog").add(
  HttpApiEndpoint.get("get", "/inference-log", { success: InferenceLogSetting }),
  HttpApiEndpoint.put("set", "/inference-log", {
    payload: InferenceLogSetting,
    success: InferenceLogSetting
  }).annotate(
    OpenApi.Description,
    "Record inference metadata (never prompt or completion text) for this organization, or stop."
  )
) {}

export const CustomProviderList = Schema.Struct({ data: Schema.Array(CustomProvider) })

export class CustomProvidersApi extends HttpApiGroup.make("customProviders").add(
  HttpApiEndpoint.get("list", "/custom-providers", { success: CustomProviderList })
    .annotate(
      OpenApi.Description,
      "The organization's custom providers (no keys: those are in the vault, under the same slug)."
    ),
  HttpApiEndpoint.post("add", "/custom-providers", {
    payload: NewCustomProvider,
    success: Created(CustomProvider),
    error: ManageInvalidRequestBody
  }).annotate(
    OpenApi.Description,
    "Register a provider: https base URL that resolves only to public addresses, surfaces among chat, responses and messages, auth bearer, x-api-key or header:<name>, key-free default headers. 400 says what is wrong."
  ),
  HttpApiEndpoint.delete("remove", "/custom-providers/:slug", {
    params: { slug: Schema.String },
    success: HttpApiSchema.NoContent,
    error: [ManageInvalidRequestBody, ManageNotFoundBody]
  }).annotate(OpenApi.Description, "Remove a custom provider and its stored key.")
) {}

/**
 * Every body is JSON, sent uncompressed: another `Content-Type` (a form, `text/plain`) or a
 * `Content-Encoding` other than identity is `415` in the dialect rather than the framework's plain
 * text. Runs after authentication, on endpoints that take a body.
 */
export class ManageBodyFormat
  extends HttpApiMiddleware.Service<ManageBodyFormat>()("vdb/gateway/manage/ManageBodyFormat", {
    error: ManageUnsupportedMediaTypeBody
  })
{}

/** Mounted under `/manage/v1`; OpenAPI at `/manage/v1/openapi.json`. */
export class ManageApi extends HttpApi.make("vdb-gateway-manage")
  .add(GuardrailsApi)
  .add(PoliciesApi)
  .add(ProviderKeysApi)
  .add(InferenceLogApi)
  .add(CustomProvidersApi)
  // Innermost first: the body's format is judged only for an authenticated caller, like its content.
  .middleware(ManageBodyFormat)
  .middleware(ManageAuthentication)
  .middleware(ManageValidation)
  .middleware(ManageFailures)
  .prefix("/manage/v1")
  .annotateMerge(OpenApi.annotations({
    title: "vdb gateway management API",
    version: "1.0.0",
    description:
      "One organization's firewall and gateway settings. Authorization: ApiKey <org_uuid>:<hex> (the vulnerability API credential; requests count against the organization's limits). Errors: {\"error\": {\"message\", \"type\", \"code\"}}."
  }))
{}
