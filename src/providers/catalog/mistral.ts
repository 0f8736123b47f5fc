import { chatProvider } from "./ProviderSpec.ts"

export const mistral = chatProvider({
  slug: "mistral",
  displayName: "Mistral",
  baseUrl: "https://api.mistral.ai/v1",
  models: ["mistral-large-latest", "mistral-medium-latest", "mistral-small-latest", "codestral-latest"]
})
