import { Redacted } from "effect"
import { isRefused, parseKiroSignIn } from "../../../schema/KiroSignIn.ts"

/**
 * Why a value offered as a provider key is refused for its provider, if it
 * is: the `kiro` key is the sign-in as JSON, checked wherever a key is stored
 * (admin socket and management API), so a bad one is refused at once rather
 * than at the first request. One line, never quoting the value.
 */
export const providerKeyRefusal = (provider: string, key: Redacted.Redacted<string>): string | undefined => {
  if (provider !== "kiro") return undefined
  const parsed = parseKiroSignIn(Redacted.value(key))
  return isRefused(parsed) ? parsed.refused : undefined
}
