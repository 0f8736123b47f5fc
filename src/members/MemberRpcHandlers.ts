import { Effect } from "effect"
import { Organizations } from "../orgs/Organizations.ts"
import { MemberError, MemberInvalid } from "./MemberError.ts"
import { MemberRpcs } from "./MemberRpcs.ts"
import { Members } from "./Members.ts"

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
