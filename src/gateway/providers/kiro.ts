import { bearer, type ProviderSpec } from "./ProviderSpec.ts"

/**
 * Catalog entry only: the Kiro relay (token minting from the vault's sign-in,
 * binary event stream) arrives with the custom-provider issue.
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
