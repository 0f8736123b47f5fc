import { Context, Duration, Effect, Layer, Schema } from "effect"
import { lookup } from "node:dns"

const RESOLVE_TIMEOUT = Duration.seconds(5)

/** The name has no address (or the resolver failed): nothing can be vetted, so nothing is sent. */
export class ResolveFailed extends Schema.TaggedError<ResolveFailed>()("ResolveFailed", {
  host: Schema.String
}) {
  override get message() {
    return `${this.host} does not resolve`
  }
}

/**
 * Name resolution for custom providers, as a service so tests can answer
 * with any address without touching DNS (and without dialling it). The
 * answer is every address of the name (`all: true`): vetting refuses a name
 * if any one of them is reserved.
 */
export class Resolver extends Context.Service<Resolver, {
  resolve(host: string): Effect.Effect<ReadonlyArray<string>, ResolveFailed>
}>()("vdb/gateway/custom/Resolver") {
  /**
   * The system resolver (`dns.lookup`, as `net.connect` would use it). A
   * lookup that takes longer than `RESOLVE_TIMEOUT` counts as failed (the
   * request is 502 `upstream_unreachable`, nothing sent); interrupting
   * abandons the answer.
   */
  static readonly layer = Layer.succeed(Resolver)(Resolver.of({
    resolve: (host) =>
      Effect.callback<ReadonlyArray<string>, ResolveFailed>((resume) => {
        lookup(host, { all: true, order: "verbatim" }, (error, addresses) => {
          if (error !== null || addresses.length === 0) resume(Effect.fail(new ResolveFailed({ host })))
          else resume(Effect.succeed(addresses.map((entry) => entry.address)))
        })
      }).pipe(
        Effect.timeoutOrElse({ duration: RESOLVE_TIMEOUT, orElse: () => Effect.fail(new ResolveFailed({ host })) })
      )
  }))

  /**
   * Answers from a function (tests): `answer(host, n)` with `n` the number of
   * earlier lookups of that host, so an answer can change between lookups.
   * `undefined` is a failed lookup.
   */
  static readonly layerFrom = (answer: (host: string, n: number) => ReadonlyArray<string> | undefined) => {
    const counts = new Map<string, number>()
    return Layer.succeed(Resolver)(Resolver.of({
      resolve: (host) =>
        Effect.suspend(() => {
          const n = counts.get(host) ?? 0
          counts.set(host, n + 1)
          const addresses = answer(host, n)
          return addresses === undefined || addresses.length === 0
            ? Effect.fail(new ResolveFailed({ host }))
            : Effect.succeed(addresses)
        })
    }))
  }
}
