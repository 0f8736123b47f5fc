import { chatProvider } from "./ProviderSpec.ts"

export const deepseek = chatProvider({
  slug: "deepseek",
  displayName: "DeepSeek",
  baseUrl: "https://api.deepseek.com/v1",
  models: ["deepseek-chat", "deepseek-reasoner"]
})
