import { chatProvider } from "./ProviderSpec.ts"

export const alibaba = chatProvider({
  slug: "alibaba",
  displayName: "Alibaba Cloud (Qwen)",
  baseUrl: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
  models: ["qwen-max", "qwen-plus", "qwen-turbo"]
})
