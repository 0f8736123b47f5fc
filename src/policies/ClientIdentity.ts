type HeaderRecord = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/**
 * The client name a request is judged by (`client` policy entries). The
 * first row whose User-Agent test matches wins (then the first whose header
 * matches), so specific agents come before the SDKs
 * they are built on (Claude Code runs on the Anthropic TypeScript SDK, Codex
 * and Cursor send OpenAI-style requests). Documented in docs/gateway.md.
 */
export const CLIENT_TABLE: ReadonlyArray<{
  readonly name: string
  /** Lower-cased `User-Agent` substring (prefix when it starts with `^`). */
  readonly userAgent: ReadonlyArray<string>
  /** Header name and value (lower-cased) that also identify the client. */
  readonly headers?: ReadonlyArray<readonly [string, string]>
}> = [
  { name: "claude-code", userAgent: ["^claude-cli/", "claude-code"], headers: [["x-app", "cli"]] },
  {
    name: "codex",
    userAgent: ["^codex_cli_rs/", "^codex_exec/", "^codex_vscode/", "^codex/"],
    headers: [["originator", "codex_cli_rs"]]
  },
  { name: "cursor", userAgent: ["cursor/"] },
  { name: "kiro", userAgent: ["kiroide", "kiro-cli", "^kiro/"] },
  { name: "cline", userAgent: ["cline/"] },
  { name: "roo-code", userAgent: ["roo-code/", "roocode/"] },
  { name: "continue", userAgent: ["continue/"] },
  { name: "aider", userAgent: ["aider/"] },
  { name: "opencode", userAgent: ["^opencode/"] },
  { name: "github-copilot", userAgent: ["githubcopilotchat/", "copilot/"] },
  { name: "windsurf", userAgent: ["windsurf/", "codeium/"] },
  { name: "zed", userAgent: ["^zed/"] },
  { name: "litellm", userAgent: ["litellm/"] },
  { name: "langchain", userAgent: ["langchain"] },
  { name: "openai-python", userAgent: ["^openai/python"] },
  { name: "openai-node", userAgent: ["^openai/js"] },
  { name: "anthropic-python", userAgent: ["^anthropic/python"] },
  { name: "anthropic-node", userAgent: ["^anthropic/js"] },
  { name: "curl", userAgent: ["^curl/"] }
]

const single = (value: string | ReadonlyArray<string> | undefined): string =>
  typeof value === "string" ? value.toLowerCase() : ""

const uaMatches = (ua: string, pattern: string) =>
  pattern.startsWith("^") ? ua.startsWith(pattern.slice(1)) : ua.includes(pattern)

/** `x-stainless-*` is sent by both vendors' SDKs; the package version header tells them apart only with the UA. */
const stainlessFallback = (headers: HeaderRecord): string | undefined => {
  const lang = single(headers["x-stainless-lang"])
  if (lang === "") return undefined
  const anthropic = headers["anthropic-version"] !== undefined
  if (lang === "python") return anthropic ? "anthropic-python" : "openai-python"
  if (lang === "js") return anthropic ? "anthropic-node" : "openai-node"
  return undefined
}

/** The client's name from `User-Agent` and known client headers; `unknown` when nothing identifies it. */
export const clientName = (headers: HeaderRecord): string => {
  const ua = single(headers["user-agent"])
  // The User-Agent decides first; identifying headers only when no row knows the User-Agent.
  if (ua !== "") {
    for (const row of CLIENT_TABLE) if (row.userAgent.some((pattern) => uaMatches(ua, pattern))) return row.name
  }
  for (const row of CLIENT_TABLE) {
    if (row.headers?.some(([name, value]) => single(headers[name]) === value)) return row.name
  }
  return stainlessFallback(headers) ?? "unknown"
}
