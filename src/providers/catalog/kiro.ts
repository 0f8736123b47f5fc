import { bearer, type ProviderSpec } from "./ProviderSpec.ts"

/**
 * Kiro's native API. The stored key is a sign-in, not a token: `kiro/KiroRelay.ts`
 * mints the bearer token (`kiro/KiroTokens.ts`) and serves both native paths,
 * `/generateAssistantResponse` (below) and `/ListAvailableModels` beside it.
 * `models` is what `GET /kiro/{org}/v1/models` lists; `ListAvailableModels` is live.
 */
export const kiro: ProviderSpec = {
  slug: "kiro",
  displayName: "Kiro",
  baseUrl: "https://q.us-east-1.amazonaws.com",
  surfaces: ["kiro"],
  paths: { kiro: "/generateAssistantResponse" },
  auth: bearer,
  defaultHeaders: {},
  models: ["claude-sonnet-4", "claude-sonnet-4.5", "claude-haiku-4.5"]
}
