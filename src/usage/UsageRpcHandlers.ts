import { Effect } from "effect"
import { UsageLog } from "./UsageLog.ts"
import { UsageRpcs } from "./UsageRpcs.ts"

export const UsageRpcHandlers = UsageRpcs.toLayer(Effect.gen(function*() {
  const log = yield* UsageLog
  return UsageRpcs.of({
    UsageSummary: ({ orgUuid, since }) =>
      log.summary({ orgUuid, since: since === undefined ? undefined : new Date(since) })
  })
}))
