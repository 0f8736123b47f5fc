import { Duration, Effect, Redacted } from "effect"
import { randomUUID } from "node:crypto"
import type { BackendUnavailable } from "../cache/BackendUnavailable.ts"
import { isOrgUuid, makeKeyCache } from "../cache/KeyCache.ts"
import type { InvalidationBus } from "../db/InvalidationBus.ts"
import type { SecretBox } from "../secrets/SecretBox.ts"
import { ProviderKeyMissing, ProviderKeyUnreadable } from "./ProviderKeyErrors.ts"
import type { ProviderKeyStore } from "./ProviderKeyStore.ts"
import { openProviderKey, sealProviderKey } from "./SealedProviderKey.ts"

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/

/**
 * How long a lease holds without being ended: longer than the call made under it (a Kiro refresh is
 * cut at 30 s), so it expires only when its holder stopped.
 */
const LEASE_MS = 60_000
/** How often a process waiting for a lease looks again. */
const LEASE_POLL = "100 millis"

/** What one process holds about an (organization, provider) pair until it changes (at most one TTL if that news is lost). */
type VaultEntry = Redacted.Redacted<string> | "missing" | "unreadable"

/**
 * The vault with a per-process cache of each opened key (or of its absence).
 * A set or removed key is published on the invalidation bus and evicted in
 * every process at once; the TTL shared with service keys (default 30 s, at
 * most 60 s) only bounds a lost notification.
 *
 * Why the opened key is cached rather than the ciphertext: opening costs
 * ~45-60 µs on this machine class (an AES-GCM context per call), a tenth of the
 * gateway's p50 budget, and a copy of the plaintext held for seconds exposes
 * nothing new — the master key that opens every row lives in the same process.
 * The key stays inside a `Redacted` and is dropped when the entry expires or
 * is evicted. A failed read is not cached and fails closed.
 */
export const makeProviderKeys = Effect.fnUntraced(function*(options: {
  readonly store: ProviderKeyStore
  readonly box: SecretBox["Service"]
  readonly ttl: Duration.Duration
  readonly bus: InvalidationBus
}) {
  const { box, bus, store, ttl } = options
  const cacheKey = (orgUuid: string, provider: string) => `${orgUuid}/${provider}`

  const readEntry = (key: string): Effect.Effect<VaultEntry, BackendUnavailable> => {
    const slash = key.indexOf("/")
    const org = key.slice(0, slash)
    const provider = key.slice(slash + 1)
    return store.sealedOf(org, provider).pipe(
      Effect.flatMap((sealed): Effect.Effect<VaultEntry> =>
        sealed === undefined
          ? Effect.succeed("missing")
          : openProviderKey(box, sealed, org, provider).pipe(
            Effect.map((opened): VaultEntry => Redacted.make(opened, { label: `${provider} key` })),
            Effect.orElseSucceed((): VaultEntry => "unreadable")
          )
      )
    )
  }

  const cache = yield* makeKeyCache({
    what: "provider-key",
    backend: "provider",
    read: readEntry,
    ttl,
    bus,
    channels: ["provider-key"],
    publishOn: "provider-key"
  })
  const { unavailable } = cache

  const get = (
    orgUuid: string,
    provider: string
  ): Effect.Effect<Redacted.Redacted<string>, ProviderKeyMissing | ProviderKeyUnreadable | BackendUnavailable> => {
    if (!isOrgUuid(orgUuid) || !SLUG.test(provider)) return Effect.fail(new ProviderKeyMissing({ provider }))
    const org = orgUuid.toLowerCase()
    return Effect.flatMap(cache.get(cacheKey(org, provider)), (entry): Effect.Effect<
      Redacted.Redacted<string>,
      ProviderKeyMissing | ProviderKeyUnreadable
    > =>
      entry === "missing"
        ? Effect.fail(new ProviderKeyMissing({ provider }))
        : entry === "unreadable"
        ? Effect.fail(new ProviderKeyUnreadable({ provider }))
        : Effect.succeed(entry))
  }

  const set = Effect.fn("ProviderKeys.set")(
    function*(orgUuid: string, provider: string, key: Redacted.Redacted<string>) {
      const org = orgUuid.toLowerCase()
      const sealed = yield* sealProviderKey(box, org, provider, Redacted.value(key))
      yield* store.put(org, provider, sealed, box.keyId)
      yield* cache.changed(cacheKey(org, provider))
    }
  )

  const remove = Effect.fn("ProviderKeys.remove")(function*(orgUuid: string, provider: string) {
    const org = orgUuid.toLowerCase()
    const removed = yield* store.remove(org, provider)
    if (removed) yield* cache.changed(cacheKey(org, provider))
    return removed
  })

  const list = Effect.fn("ProviderKeys.list")((orgUuid: string) => store.list(orgUuid.toLowerCase()))

  /**
   * A lease, not a lock held in the database: the holder calls the provider while holding no
   * session or transaction (a pool of 10 held by slow refreshes stalled every request), and its
   * write-back is a compare-and-set against the value it read, so a key deleted or replaced during
   * the call stays deleted or replaced. Others poll until the lease ends, or expires if its holder
   * stopped.
   */
  const exclusive = <A, E>(
    orgUuid: string,
    provider: string,
    f: (
      stored: Redacted.Redacted<string> | undefined
    ) => Effect.Effect<readonly [A, Redacted.Redacted<string> | undefined], E>
  ): Effect.Effect<A, E | ProviderKeyUnreadable | BackendUnavailable> => {
    const org = orgUuid.toLowerCase()
    const holder = randomUUID()
    const end = store.release(org, provider, holder).pipe(Effect.ignoreCause({ log: "Warn" }))
    const claimed = Effect.gen(function*() {
      while (true) {
        const claim = yield* store.claim(org, provider, holder, LEASE_MS)
        if (claim !== "held") return claim
        yield* Effect.sleep(LEASE_POLL)
      }
    }).pipe(Effect.catchDefect(() => Effect.fail(unavailable)))
    return Effect.gen(function*() {
      const claim = yield* claimed
      if (claim === "missing") {
        // Nothing to lease, and nothing to write back over: a deleted key stays deleted.
        const [value] = yield* f(undefined)
        return value
      }
      const opened = yield* openProviderKey(box, claim.sealed, org, provider).pipe(
        Effect.mapError(() => new ProviderKeyUnreadable({ provider })),
        Effect.tapError(() => end)
      )
      const [value, write] = yield* f(Redacted.make(opened, { label: `${provider} key` })).pipe(
        Effect.onExit((exit) => exit._tag === "Success" ? Effect.void : end)
      )
      if (write === undefined) {
        yield* end
        return value
      }
      const sealed = yield* sealProviderKey(box, org, provider, Redacted.value(write))
      const stored = yield* store.release(org, provider, holder, { expected: claim.sealed, sealed, keyId: box.keyId })
        .pipe(
          // The holder's result stands, as it would had the write been lost a moment later.
          Effect.catchDefect(() =>
            Effect.as(Effect.logError(`${provider} key: the new value could not be stored`), false)
          )
        )
      if (stored) yield* cache.changed(cacheKey(org, provider))
      return value
    })
  }

  return { get, set, remove, list, exclusive }
})
