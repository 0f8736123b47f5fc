import { Effect } from "effect"
import { GatewayInvalidRequest } from "../../../schema/GatewayError.ts"
import type { InferenceEnvelope } from "../../../schema/GatewayRequest.ts"
import { invalidJson, jsonObjectOf } from "../relay/RequestBody.ts"

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export interface KiroBody {
  readonly parsed: Record<string, unknown>
  /**
   * The model is `conversationState.currentMessage.userInputMessage.modelId`;
   * without one Kiro picks its default, and the model policy sees the empty
   * name (a deny list lets it through, an allowlist refuses it). Kiro
   * responses are always an event stream.
   */
  readonly envelope: InferenceEnvelope
}

export const modelIdOf = (parsed: Record<string, unknown>): string | undefined => {
  const state = parsed.conversationState
  if (!isObject(state) || !isObject(state.currentMessage)) return undefined
  const message = state.currentMessage.userInputMessage
  return isObject(message) && typeof message.modelId === "string" ? message.modelId : undefined
}

/** A `generateAssistantResponse` body: a JSON object; nothing else is required of it. */
export const parseKiroBody = (body: Buffer): Effect.Effect<KiroBody, GatewayInvalidRequest> => {
  const parsed = jsonObjectOf(body)
  if (parsed === undefined) return Effect.fail(invalidJson)
  return Effect.succeed({ parsed, envelope: { model: modelIdOf(parsed) ?? "", stream: true, messages: undefined } })
}

const OPEN_BRACE = 0x7b
const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d])

/**
 * Social sign-ins address Kiro through their profile ARN, which Kiro's own
 * clients put at the top of the body. A client that signed in nowhere but the
 * gateway has none to send, so the one from the vault's sign-in is added,
 * as the object's first member: every byte the client sent stays as it was.
 */
export const withProfileArn = (
  body: Uint8Array,
  parsed: Record<string, unknown>,
  profileArn: string | undefined
): Uint8Array => {
  if (profileArn === undefined || parsed.profileArn !== undefined) return body
  let at = 0
  while (at < body.length && WHITESPACE.has(body[at]!)) at++
  if (body[at] !== OPEN_BRACE) return body
  let next = at + 1
  while (next < body.length && WHITESPACE.has(body[next]!)) next++
  const empty = body[next] === 0x7d
  const member = new TextEncoder().encode(`"profileArn":${JSON.stringify(profileArn)}${empty ? "" : ","}`)
  const out = new Uint8Array(body.length + member.length)
  out.set(body.subarray(0, at + 1))
  out.set(member, at + 1)
  out.set(body.subarray(at + 1), at + 1 + member.length)
  return out
}

/** `?profileArn=` for `ListAvailableModels`, added the same way when the client's query lacks it. */
export const queryWithProfileArn = (query: string, profileArn: string | undefined): string => {
  if (profileArn === undefined) return query
  if (new URLSearchParams(query).has("profileArn")) return query
  // Appended, so the client's own parameters keep their exact encoding.
  const param = `profileArn=${encodeURIComponent(profileArn)}`
  return query === "" || query === "?" ? `?${param}` : `${query}&${param}`
}
