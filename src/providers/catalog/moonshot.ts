import { chatProvider } from "./ProviderSpec.ts"

export const moonshot = chatProvider({
  slug: "moonshot",
  displayName: "Moonshot AI",
  baseUrl: "https://api.moonshot.ai/v1",
  models: ["kimi-k2-0905-preview", "moonshot-v1-128k"]
})
