import { Effect, Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import { Organizations } from "../orgs/Organizations.ts"
import { Member } from "./Member.ts"
import { MemberError, MemberInvalid } from "./MemberError.ts"
import { Members } from "./Members.ts"

/** The administrative operations on members (served on the admin socket). */
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

export const MemberRpcHandlers = MemberRpcs.toLayer(Effect.gen(function*() {
  const members = yield* Members
  const orgs = yield* Organizations
  return MemberRpcs.of({
    MemberCreate: ({ email, org, password }) =>
      orgs.show(org).pipe(
        Effect.mapError((e) => new MemberError({ reason: new MemberInvalid({ reason: e.message }) })),
        Effect.andThen((found) => members.create({ orgUuid: found.uuid, email, password }))
      ),
    MemberList: ({ org }) => members.list(org),
    MemberRemove: ({ uuid }) => members.remove(uuid)
  })
}))
