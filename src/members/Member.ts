import { Schema } from "effect"

/** A member of an organization: who may sign in to the site and approve device grants. */
export class Member extends Schema.Class<Member>("vdb/members/Member")({
  uuid: Schema.String,
  orgUuid: Schema.String,
  email: Schema.String,
  /** ISO 8601. */
  createdAt: Schema.String
}) {}
