import { chatProvider } from "./ProviderSpec.ts"

export const openrouter = chatProvider({
  slug: "openrouter",
  displayName: "OpenRouter",
  baseUrl: "https://openrouter.ai/api/v1",
  models: [
    "openai/gpt-4.1",
    "anthropic/claude-sonnet-4.5",
    "google/gemini-2.5-pro",
    "meta-llama/llama-3.3-70b-instruct"
  ]
})
