import { chatProvider } from "./ProviderSpec.ts"

export const xai = chatProvider({
  slug: "xai",
  displayName: "xAI",
  baseUrl: "https://api.x.ai/v1",
  models: ["grok-4", "grok-3", "grok-3-mini"]
})
