import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Redacted, Scope } from "effect"
import { Test } from "../../layers/Test.ts"
import { Invalidation } from "../../src/db/Invalidation.ts"
import type { Invalidated } from "../../src/db/InvalidationBus.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { ServiceKeys } from "../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../../src/vault/ProviderKeys.ts"

describe("the in-process invalidation bus", () => {
  layer(Invalidation.layerMemory)((it) => {
    it.effect("delivers to the channel's subscribers before publish returns, and stops when the scope closes", () =>
      Effect.gen(function*() {
        const bus = yield* Invalidation
        const seen: Array<Invalidated> = []
        const scope = yield* Scope.make()
        yield* bus.subscribe("organization", (event) => Effect.sync(() => void seen.push(event))).pipe(
          Scope.provide(scope)
        )
        yield* bus.publish("organization", "a")
        yield* bus.publish("service-key", "b")
        assert.deepStrictEqual(seen, [{ _tag: "Key", key: "a" }])
        yield* Scope.close(scope, Exit.void)
        yield* bus.publish("organization", "c")
        assert.deepStrictEqual(seen, [{ _tag: "Key", key: "a" }])
      }))
  })
})

// Every in-memory domain over one bus (the unit-test application layer):
// a change through one service empties the others' caches with no TTL to wait.
describe("in-memory domains over one bus", () => {
  layer(Test)((it) => {
    it.effect("deactivation, activation and key changes apply to the next verification", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const keys = yield* ServiceKeys
        const vault = yield* ProviderKeys
        const org = yield* orgs.create({ name: "bus" })
        const { key } = yield* keys.create(org.uuid)
        assert.strictEqual(yield* keys.verify(org.uuid, key), "valid")
        yield* orgs.setActive(org.uuid, false)
        assert.strictEqual(yield* keys.verify(org.uuid, key), "invalid")
        yield* orgs.setActive(org.uuid, true)
        assert.strictEqual(yield* keys.verify(org.uuid, key), "valid")

        yield* vault.set(org.uuid, "openai", Redacted.make("sk-one"))
        assert.strictEqual(Redacted.value(yield* vault.get(org.uuid, "openai")), "sk-one")
        yield* vault.set(org.uuid, "openai", Redacted.make("sk-two"))
        assert.strictEqual(Redacted.value(yield* vault.get(org.uuid, "openai")), "sk-two")
      }))
  })
})
