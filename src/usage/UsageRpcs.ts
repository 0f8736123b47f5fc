import { Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"

const UsageRowSchema = Schema.Struct({
  orgUuid: Schema.NullOr(Schema.String),
  route: Schema.String,
  requests: Schema.Number,
  errors: Schema.Number,
  rateLimited: Schema.Number,
  avgLatencyMs: Schema.Number,
  p99LatencyMs: Schema.Number,
  lastAt: Schema.String
})

export const UsageSummarySchema = Schema.Struct({
  rows: Schema.Array(UsageRowSchema),
  dropped: Schema.Number
})

/** `vdb usage` through the admin socket: the running server owns the database. */
export class UsageRpcs extends RpcGroup.make(
  Rpc.make("UsageSummary", {
    payload: { orgUuid: Schema.optional(Schema.String), since: Schema.optional(Schema.String) },
    success: UsageSummarySchema
  })
) {}
