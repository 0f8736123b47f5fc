import { Effect } from "effect"
import type { SecretBox } from "../secrets/SecretBox.ts"

/**
 * A provider key is sealed together with the organization and provider it
 * belongs to. SecretBox takes no associated data, so the binding travels inside
 * the authenticated plaintext: a ciphertext moved to another row (another
 * provider or organization) still opens, but is refused here.
 */
interface SealedPayload {
  readonly v: 1
  readonly org: string
  readonly provider: string
  readonly key: string
}

export const sealProviderKey = (box: SecretBox["Service"], orgUuid: string, provider: string, key: string) =>
  box.seal(JSON.stringify({ v: 1, org: orgUuid, provider, key } satisfies SealedPayload))

/** Fails with `undefined` (no detail: the reason may not be logged next to key material). */
export const openProviderKey = (
  box: SecretBox["Service"],
  sealed: string,
  orgUuid: string,
  provider: string
): Effect.Effect<string, void> =>
  box.open(sealed).pipe(
    Effect.mapError(() => undefined),
    Effect.flatMap((plain) => {
      const payload = parse(plain)
      return payload !== undefined && payload.org === orgUuid && payload.provider === provider
        ? Effect.succeed(payload.key)
        : Effect.fail(undefined)
    })
  )

const parse = (plain: string): SealedPayload | undefined => {
  try {
    const value = JSON.parse(plain) as Partial<SealedPayload> | null
    return value !== null && value.v === 1 && typeof value.org === "string" &&
        typeof value.provider === "string" && typeof value.key === "string"
      ? value as SealedPayload
      : undefined
  } catch {
    return undefined
  }
}
