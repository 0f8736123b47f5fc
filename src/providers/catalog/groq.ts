import { chatProvider } from "./ProviderSpec.ts"

export const groq = chatProvider({
  slug: "groq",
  displayName: "Groq",
  baseUrl: "https://api.groq.com/openai/v1",
  models: ["llama-3.3-70b-versatile", "llama-3.1-8b-instant", "openai/gpt-oss-120b"]
})
