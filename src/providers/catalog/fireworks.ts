import { chatProvider } from "./ProviderSpec.ts"

export const fireworks = chatProvider({
  slug: "fireworks",
  displayName: "Fireworks AI",
  baseUrl: "https://api.fireworks.ai/inference/v1",
  models: ["accounts/fireworks/models/llama-v3p3-70b-instruct", "accounts/fireworks/models/deepseek-v3"]
})
