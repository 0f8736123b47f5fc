import { Redacted, Result } from "effect"
import { providerKeyRefusal } from "../providers/kiro/KiroSignInCheck.ts"
import { SERVICE_KEY_PREFIX } from "../servicekeys/ServiceKeyFormat.ts"

/** Generous for any API key or credential blob; anything larger is a mistake (a file pasted or piped in). */
export const MAX_PROVIDER_KEY_BYTES = 16 * 1024

/**
 * What an HTTP field value may not contain (RFC 9110 5.5: visible ASCII, obs-text, space and tab),
 * exactly undici's own test: a key outside it makes undici refuse every request that carries it.
 */
const NOT_FIELD_VALUE = /[^\t\x20-\x7e\x80-\xff]/

export const KEY_NOT_FIELD_VALUE =
  "the provider key is not a valid HTTP header value: it holds a line break, a control character or a character beyond U+00FF (one key, on one line)"

/**
 * Whether a value offered as `provider`'s key may be stored, and the value to store: the same
 * rules on every path that sets one (management API, admin socket, CLI). Surrounding whitespace is
 * trimmed (`echo` and key files end with a newline). The reason is one line and never quotes the value.
 *
 * Every key goes upstream as a header value, except kiro's: that one is the sign-in as JSON (a
 * file that may well span lines), checked by `providerKeyRefusal` and never sent as a header.
 */
export const acceptProviderKey = (
  provider: string,
  offered: Redacted.Redacted<string>
): Result.Result<Redacted.Redacted<string>, string> => {
  const text = Redacted.value(offered).trim()
  if (text.length === 0) return Result.fail("the provider key is empty")
  if (Buffer.byteLength(text) > MAX_PROVIDER_KEY_BYTES) {
    return Result.fail(`the provider key is longer than ${MAX_PROVIDER_KEY_BYTES} bytes`)
  }
  if (text.startsWith(SERVICE_KEY_PREFIX)) return Result.fail("that is a vdb service key, not a provider key")
  const key = Redacted.make(text)
  const refused = providerKeyRefusal(provider, key)
  if (refused !== undefined) return Result.fail(refused)
  if (provider !== "kiro" && NOT_FIELD_VALUE.test(text)) return Result.fail(KEY_NOT_FIELD_VALUE)
  return Result.succeed(key)
}
