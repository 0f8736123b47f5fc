import type { Surface } from "../../../schema/GatewayRequest.ts"

/** An inference endpoint of a surface; `count_tokens` belongs to `messages`. */
export type Endpoint = "chat" | "responses" | "messages" | "count_tokens" | "kiro"

/** How the stored provider key travels upstream. */
export type AuthStyle =
  | { readonly _tag: "Bearer" } // Authorization: Bearer <key>
  | { readonly _tag: "Header"; readonly name: string } // e.g. x-api-key: <key>

/**
 * One provider as data, in the spirit of Portkey's `providers/<name>/`: the
 * request path only reads these fields, so adding a provider is adding a file.
 */
export interface ProviderSpec {
  readonly slug: string
  readonly displayName: string
  /** Default upstream; `VDB_PROVIDER_<SLUG>_BASE_URL` overrides it. */
  readonly baseUrl: string
  readonly surfaces: ReadonlyArray<Surface>
  /** Upstream path appended to the base URL, per endpoint served. */
  readonly paths: Partial<Record<Endpoint, string>>
  readonly auth: AuthStyle
  /** Keyless defaults (version headers); a client-sent value wins. */
  readonly defaultHeaders: Readonly<Record<string, string>>
  /** What `GET .../v1/models` lists (before the organization's model policy). */
  readonly models: ReadonlyArray<string>
}

export const bearer: AuthStyle = { _tag: "Bearer" }

/** Paths of an OpenAI-compatible chat provider whose base URL ends in its API version. */
export const chatPaths: ProviderSpec["paths"] = { chat: "/chat/completions" }

/** Builds a chat-only, OpenAI-compatible provider: most of the catalog. */
export const chatProvider = (
  spec: Pick<ProviderSpec, "slug" | "displayName" | "baseUrl" | "models">
): ProviderSpec => ({
  ...spec,
  surfaces: ["chat"],
  paths: chatPaths,
  auth: bearer,
  defaultHeaders: {}
})
