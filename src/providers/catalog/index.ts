import { alibaba } from "./alibaba.ts"
import { anthropic } from "./anthropic.ts"
import { deepseek } from "./deepseek.ts"
import { fireworks } from "./fireworks.ts"
import { groq } from "./groq.ts"
import { kiro } from "./kiro.ts"
import { minimax } from "./minimax.ts"
import { mistral } from "./mistral.ts"
import { moonshot } from "./moonshot.ts"
import { openai } from "./openai.ts"
import { openrouter } from "./openrouter.ts"
import type { ProviderSpec } from "./ProviderSpec.ts"
import { together } from "./together.ts"
import { xai } from "./xai.ts"

/** The built-in providers, addressed by slug in the first path segment: the one list of providers (`keys/ProviderSlugs.ts` reads it). */
export const builtinProviders: ReadonlyArray<ProviderSpec> = [
  openai,
  anthropic,
  openrouter,
  groq,
  mistral,
  deepseek,
  xai,
  together,
  fireworks,
  alibaba,
  moonshot,
  minimax,
  kiro
]
