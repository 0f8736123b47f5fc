import { Schema } from "effect"

export class MemberNotFound extends Schema.TaggedError<MemberNotFound>()("MemberNotFound", {
  uuid: Schema.String
}, { httpApiStatus: 404 }) {
  override get message() {
    return `member ${this.uuid} does not exist`
  }
}

export class MemberInvalid extends Schema.TaggedError<MemberInvalid>()("MemberInvalid", {
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return this.reason
  }
}

export class MemberExists extends Schema.TaggedError<MemberExists>()("MemberExists", {
  email: Schema.String
}, { httpApiStatus: 409 }) {
  override get message() {
    return `a member with email ${this.email} already exists`
  }
}

/** The members domain's one error; the reason says which and carries the status. */
export class MemberError extends Schema.TaggedError<MemberError>()("MemberError", {
  reason: Schema.Union([MemberNotFound, MemberInvalid, MemberExists])
}) {
  override get message() {
    return this.reason.message
  }
}
