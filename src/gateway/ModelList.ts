import type { AnthropicModelList, OpenAiModelList } from "../../schema/GatewayRequest.ts"
import type { Provider } from "../providers/ProviderCatalog.ts"

const EPOCH = "1970-01-01T00:00:00Z"

/** The listing in the shape of the provider's surface; the catalog carries no dates, so they are fixed. */
export const modelList = (
  provider: Provider,
  models: ReadonlyArray<string>
): OpenAiModelList | AnthropicModelList =>
  provider.spec.surfaces[0] === "messages"
    ? {
      data: models.map((id) => ({ type: "model" as const, id, display_name: id, created_at: EPOCH })),
      has_more: false,
      first_id: models[0] ?? null,
      last_id: models.at(-1) ?? null
    }
    : {
      object: "list" as const,
      data: models.map((id) => ({ id, object: "model" as const, created: 0, owned_by: provider.slug }))
    }
