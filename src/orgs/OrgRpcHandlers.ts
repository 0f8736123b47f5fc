import { Effect } from "effect"
import { Organizations } from "./Organizations.ts"
import { OrgRpcs } from "./OrgRpcs.ts"

export const OrgRpcHandlers = OrgRpcs.toLayer(Effect.gen(function*() {
  const orgs = yield* Organizations
  return OrgRpcs.of({
    OrgCreate: (input) => orgs.create(input),
    OrgList: () => orgs.list(),
    OrgShow: ({ uuid }) => orgs.show(uuid),
    OrgRotateSecret: ({ uuid }) => orgs.rotateSecret(uuid),
    OrgSetActive: ({ active, uuid }) => orgs.setActive(uuid, active),
    OrgSetLimits: ({ limits, uuid }) => orgs.setLimits(uuid, limits)
  })
}))
