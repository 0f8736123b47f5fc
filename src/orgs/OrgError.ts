import { Schema } from "effect"

export class OrgNotFound extends Schema.TaggedError<OrgNotFound>()("OrgNotFound", {
  uuid: Schema.String
}, { httpApiStatus: 404 }) {
  override get message() {
    return `organization ${this.uuid} does not exist`
  }
}

export class OrgInvalid extends Schema.TaggedError<OrgInvalid>()("OrgInvalid", {
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return this.reason
  }
}

export class OrgError extends Schema.TaggedError<OrgError>()("OrgError", {
  reason: Schema.Union([OrgNotFound, OrgInvalid])
}) {
  override get message() {
    return this.reason.message
  }
}
