import { Context, Effect, Layer } from "effect"
import { looksNumeric, parseAddress, type ParsedAddress, reservedReason } from "./AddressVetting.ts"
import type { ResolveFailed } from "./Resolver.ts"
import { Resolver } from "./Resolver.ts"

/**
 * What counts as a reachable custom-provider address. Production refuses
 * every reserved range and trusts only the system's CAs; it has no options,
 * so no configuration or environment variable can loosen it. Tests that need
 * a local https provider build the allowance layer, which lets through only
 * the exact addresses they name and trusts their test CA.
 */
export class VettingPolicy extends Context.Service<VettingPolicy, {
  /** Why the address is refused, or `undefined` to allow it. */
  refuses(address: ParsedAddress): string | undefined
  /** Extra trusted CA certificates (PEM) for the custom-provider connections; none in production. */
  readonly ca: ReadonlyArray<string>
}>()("vdb/gateway/custom/VettingPolicy") {
  static readonly layer = Layer.succeed(VettingPolicy)(VettingPolicy.of({ refuses: reservedReason, ca: [] }))

  /** Test-only: `addresses` (exact, e.g. `127.0.0.1`) pass despite being reserved; everything else as in production. */
  static readonly allowForTests = (options: { readonly addresses: ReadonlyArray<string>; readonly ca?: string }) => {
    const allowed = new Set(options.addresses.map((text) => parseAddress(text)!.text))
    return Layer.succeed(VettingPolicy)(VettingPolicy.of({
      refuses: (address) => allowed.has(address.text) ? undefined : reservedReason(address),
      ca: options.ca === undefined ? [] : [options.ca]
    }))
  }
}

/** The one address the connection will use, or why the host is refused. */
export type HostVerdict =
  | { readonly _tag: "Vetted"; readonly address: ParsedAddress }
  | { readonly _tag: "Refused"; readonly reason: string }

/** `URL.hostname` keeps the brackets of an IPv6 literal. */
const unbracket = (host: string) => host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host

/**
 * Vets a host: a literal in any notation is parsed and classified without a
 * lookup; a name is resolved once and refused if ANY of its addresses is
 * reserved (an attacker controlling a name's records can order them). The
 * first address is the one connected to, by address, so a later answer for
 * the same name plays no part.
 */
export const makeHostVetting = Effect.gen(function*() {
  const resolver = yield* Resolver
  const policy = yield* VettingPolicy
  const judge = (address: ParsedAddress | undefined): HostVerdict => {
    if (address === undefined) return { _tag: "Refused", reason: "not an address" }
    const reason = policy.refuses(address)
    return reason === undefined ? { _tag: "Vetted", address } : { _tag: "Refused", reason }
  }
  return (host: string): Effect.Effect<HostVerdict, ResolveFailed> => {
    const bare = unbracket(host)
    if (bare.includes("%")) return Effect.succeed({ _tag: "Refused", reason: "scoped address (zone id)" })
    const literal = parseAddress(bare)
    if (literal !== undefined) return Effect.succeed(judge(literal))
    if (looksNumeric(bare)) return Effect.succeed({ _tag: "Refused", reason: "not a valid address" })
    return Effect.map(resolver.resolve(bare), (answers): HostVerdict => {
      let first: ParsedAddress | undefined
      for (const answer of answers) {
        if (answer.includes("%")) return { _tag: "Refused", reason: "scoped address (zone id)" }
        const verdict = judge(parseAddress(answer))
        if (verdict._tag === "Refused") return verdict
        first ??= verdict.address
      }
      return first === undefined ? { _tag: "Refused", reason: "no address" } : { _tag: "Vetted", address: first }
    })
  }
})

export type HostVetting = Effect.Success<typeof makeHostVetting>
