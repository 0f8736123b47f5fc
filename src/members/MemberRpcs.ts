import { Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import { Member } from "./Member.ts"
import { MemberError } from "./MemberError.ts"

/** The administrative operations on members (served on the admin socket; handlers in `MemberRpcHandlers.ts`). */
export class MemberRpcs extends RpcGroup.make(
  Rpc.make("MemberCreate", {
    // The password travels only over the 0600 admin socket (or in-process), never argv.
    payload: { org: Schema.String, email: Schema.String, password: Schema.String },
    success: Member,
    error: MemberError
  }),
  Rpc.make("MemberList", { payload: { org: Schema.optional(Schema.String) }, success: Schema.Array(Member) }),
  Rpc.make("MemberRemove", { payload: { uuid: Schema.String }, success: Member, error: MemberError })
) {}
