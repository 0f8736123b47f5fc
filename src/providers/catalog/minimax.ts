import { chatProvider } from "./ProviderSpec.ts"

export const minimax = chatProvider({
  slug: "minimax",
  displayName: "MiniMax",
  baseUrl: "https://api.minimax.io/v1",
  models: ["MiniMax-M1", "MiniMax-Text-01"]
})
