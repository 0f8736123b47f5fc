import { Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import { Organization, OrgCredentials, OrgLimits, OrgName } from "../../schema/Organization.ts"
import { OrgError } from "./OrgError.ts"

const ByUuid = { uuid: Schema.String }

/** The administrative operations on organizations (served on the admin socket; handlers in `OrgRpcHandlers.ts`). */
export class OrgRpcs extends RpcGroup.make(
  Rpc.make("OrgCreate", {
    payload: { name: OrgName, perMinute: Schema.optional(Schema.Int), perWeek: Schema.optional(Schema.Int) },
    success: OrgCredentials,
    error: OrgError
  }),
  Rpc.make("OrgList", { success: Schema.Array(Organization) }),
  Rpc.make("OrgShow", { payload: ByUuid, success: Organization, error: OrgError }),
  Rpc.make("OrgRotateSecret", { payload: ByUuid, success: OrgCredentials, error: OrgError }),
  Rpc.make("OrgSetActive", { payload: { ...ByUuid, active: Schema.Boolean }, success: Organization, error: OrgError }),
  Rpc.make("OrgSetLimits", { payload: { ...ByUuid, limits: OrgLimits }, success: Organization, error: OrgError })
) {}
