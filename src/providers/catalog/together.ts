import { chatProvider } from "./ProviderSpec.ts"

export const together = chatProvider({
  slug: "together",
  displayName: "Together AI",
  baseUrl: "https://api.together.xyz/v1",
  models: ["meta-llama/Llama-3.3-70B-Instruct-Turbo", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen2.5-72B-Instruct-Turbo"]
})
