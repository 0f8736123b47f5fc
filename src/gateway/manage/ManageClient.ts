import { Context, Layer, Redacted } from "effect"
import { HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import { formatApiKey } from "../../auth/ApiKey.ts"
import type { OrgSecretCredentials } from "../../auth/OrgCredentials.ts"
import { ManageApi } from "./ManageApi.ts"
import { ManageAuthentication } from "./ManageSecurity.ts"

/** Sends `Authorization: ApiKey <org>:<hex>`, computed once from the organization's secret. */
export const ManageApiKeyClient = (credentials: OrgSecretCredentials) => {
  const header = formatApiKey(credentials.orgUuid, Redacted.value(credentials.secret))
  return HttpApiMiddleware.layerClient(
    ManageAuthentication,
    ({ next, request }) => next(HttpClientRequest.setHeader(request, "authorization", header))
  )
}

export type ManageClientShape = HttpApiClient.ForApi<typeof ManageApi>

/**
 * The typed client of the gateway management API, derived from its HttpApi.
 * `baseUrl` is the gateway's origin (`http://127.0.0.1:8081`): the paths carry
 * `/manage/v1` themselves. Needs an `HttpClient`.
 */
export class ManageClient
  extends Context.Service<ManageClient, ManageClientShape>()("vdb/gateway/manage/ManageClient")
{
  static readonly layer = (options: { readonly baseUrl: string; readonly credentials: OrgSecretCredentials }) =>
    Layer.effect(ManageClient, HttpApiClient.make(ManageApi, { baseUrl: options.baseUrl.replace(/\/+$/, "") })).pipe(
      Layer.provide(ManageApiKeyClient(options.credentials))
    )
}
