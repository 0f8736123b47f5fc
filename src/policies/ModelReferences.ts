import type { Surface } from "../../schema/GatewayRequest.ts"
import { arrayOf, isObject, valueAt } from "./DeclaredCapabilities.ts"

/**
 * Every model a request body names, per surface (issue 32 §4): the model
 * policy judges each one, since a provider may serve any of them. The fields
 * come from the providers' API references (listed in docs/gateway.md, "Fields
 * that name a model"). They are read on every provider of a surface: a custom
 * provider may be any OpenAI- or Anthropic-compatible router, and a field a
 * provider does not know is one it refuses or ignores.
 */

type Json = Readonly<Record<string, unknown>>

export interface ModelRef {
  readonly name: string
  /** Where the body names it (`models[1]`, `tools[0].model`), for the refusal's message; "" for the request's model. */
  readonly at: string
  /** A router's pattern (`anthropic/*`): it admits every model it matches. */
  readonly pattern: boolean
}

export type ModelReading =
  | {
    readonly _tag: "Read"
    readonly refs: ReadonlyArray<ModelRef>
    /** The auto router is told which models it may pick (an enabled `auto-router` plugin's `allowed_models`). */
    readonly routerConstrained: boolean
    /** A field that lets the provider pick a model the request doesn't name (Anthropic's `fallbacks: "default"`). */
    readonly providerPicks: string | undefined
  }
  /** A field that names models but not in the documented shape: what the provider makes of it is unknown. */
  | { readonly _tag: "Malformed"; readonly at: string; readonly expected: string }

const malformed = (at: string, expected: string): ModelReading => ({ _tag: "Malformed", at, expected })

/** Absent, or `null` (which the providers read as absent). */
const absent = (value: unknown) => value === undefined || value === null

/** The Kiro model of a turn: `userInputMessage.modelId`. */
const KIRO_MODEL_PATH = ["userInputMessage", "modelId"] as const

/** OpenRouter's server tools (`openrouter:advisor`, `openrouter:image_generation`) carry their model in `parameters`. */
const isOpenRouterServerTool = (tool: Json) => typeof tool.type === "string" && tool.type.startsWith("openrouter:")

class Reader {
  readonly refs: Array<ModelRef> = []
  bad: ModelReading | undefined
  routerConstrained = false
  providerPicks: string | undefined = undefined

  result(): ModelReading {
    return this.bad ??
      { _tag: "Read", refs: this.refs, routerConstrained: this.routerConstrained, providerPicks: this.providerPicks }
  }

  /** A single model name, when the field is there. */
  one(value: unknown, at: string): void {
    if (this.bad !== undefined || absent(value)) return
    if (typeof value !== "string" || value === "") this.bad = malformed(at, "a model name (a non-empty string)")
    else this.refs.push({ name: value, at, pattern: false })
  }

  /** A list of model names (or patterns), when the field is there. */
  list(value: unknown, at: string, pattern: boolean): void {
    if (this.bad !== undefined || absent(value)) return
    if (!Array.isArray(value)) {
      this.bad = malformed(at, "a list of model names")
      return
    }
    value.forEach((entry, index) => {
      if (this.bad !== undefined) return
      if (typeof entry !== "string" || entry === "") {
        this.bad = malformed(`${at}[${index}]`, "a model name (a non-empty string)")
      } else this.refs.push({ name: entry, at: `${at}[${index}]`, pattern: pattern && entry.includes("*") })
    })
  }

  /**
   * `fallbacks`: model names, or objects with a `model` (Anthropic's server-side fallback beta,
   * OpenRouter's Messages API); or a mode, `"off"`, or `"default"` (Anthropic picks the model).
   */
  fallbacks(value: unknown): void {
    if (this.bad !== undefined || absent(value) || value === "off") return
    if (typeof value === "string") {
      this.providerPicks = `fallbacks ${JSON.stringify(value.slice(0, 40))}`
      return
    }
    if (!Array.isArray(value)) {
      this.bad = malformed("fallbacks", "a list of fallback models")
      return
    }
    value.forEach((entry, index) => {
      const at = `fallbacks[${index}]`
      if (typeof entry === "string") this.one(entry, at)
      else if (isObject(entry) && typeof entry.model === "string") this.one(entry.model, `${at}.model`)
      else if (this.bad === undefined) {
        this.bad = malformed(at, "a model name, or an object with a model name in `model`")
      }
    })
  }
}

export const modelReferencesOf = (surface: Surface, body: Json, model: string): ModelReading => {
  const reader = new Reader()
  reader.refs.push({ name: model, at: "", pattern: false })
  if (surface === "kiro") {
    // The current turn's model is the request's own (`model`, "" when absent); the history's turns name theirs too.
    const current = valueAt(body, ["conversationState", "currentMessage", ...KIRO_MODEL_PATH])
    if (!absent(current) && typeof current !== "string") {
      return malformed("conversationState.currentMessage.userInputMessage.modelId", "a model name (a string)")
    }
    arrayOf(valueAt(body, ["conversationState", "history"])).forEach((turn, index) =>
      reader.one(valueAt(turn, KIRO_MODEL_PATH), `conversationState.history[${index}].userInputMessage.modelId`)
    )
    return reader.result()
  }
  // Routers' fallback lists: OpenRouter's `models` (chat, responses), `fallbacks` (messages, LiteLLM-style gateways).
  reader.list(body.models, "models", false)
  reader.fallbacks(body.fallbacks)
  // A model the request asks a server tool to consult or to draw with: OpenAI's `image_generation`,
  // Anthropic's advisor, OpenRouter's server tools (in `parameters`).
  arrayOf(body.tools).forEach((tool, index) => {
    if (!isObject(tool)) return
    reader.one(tool.model, `tools[${index}].model`)
    if (isOpenRouterServerTool(tool) && isObject(tool.parameters)) {
      reader.one(tool.parameters.model, `tools[${index}].parameters.model`)
    }
  })
  // OpenRouter's auto router picks among `allowed_models`, patterns with `*`.
  arrayOf(body.plugins).forEach((plugin, index) => {
    if (!isObject(plugin)) return
    reader.list(plugin.allowed_models, `plugins[${index}].allowed_models`, true)
    if (
      plugin.id === "auto-router" && plugin.enabled !== false && Array.isArray(plugin.allowed_models) &&
      plugin.allowed_models.length > 0
    ) {
      reader.routerConstrained = true
    }
  })
  // A second model consulted by the first (an `advisor` extension some routers take at the top level).
  if (isObject(body.advisor)) reader.one(body.advisor.model, "advisor.model")
  return reader.result()
}
