import type { ProviderSpec } from "./ProviderSpec.ts"

export const anthropic: ProviderSpec = {
  slug: "anthropic",
  displayName: "Anthropic",
  // Messages clients append `/v1` themselves, so the base carries no version.
  baseUrl: "https://api.anthropic.com",
  surfaces: ["messages"],
  paths: { messages: "/v1/messages", count_tokens: "/v1/messages/count_tokens" },
  auth: { _tag: "Header", name: "x-api-key" },
  defaultHeaders: { "anthropic-version": "2023-06-01" },
  models: [
    "claude-opus-4-1",
    "claude-opus-4-0",
    "claude-sonnet-4-5",
    "claude-sonnet-4-0",
    "claude-3-7-sonnet-latest",
    "claude-3-5-haiku-latest"
  ]
}
