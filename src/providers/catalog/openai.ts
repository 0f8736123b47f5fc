import { bearer, type ProviderSpec } from "./ProviderSpec.ts"

export const openai: ProviderSpec = {
  slug: "openai",
  displayName: "OpenAI",
  baseUrl: "https://api.openai.com/v1",
  surfaces: ["chat", "responses"],
  paths: { chat: "/chat/completions", responses: "/responses" },
  auth: bearer,
  defaultHeaders: {},
  models: ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini", "o3", "o4-mini"]
}
