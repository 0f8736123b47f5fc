import { Schema } from "effect"

export class OrgUnknown extends Schema.TaggedError<OrgUnknown>()("OrgUnknown", {
  uuid: Schema.String
}, { httpApiStatus: 404 }) {
  override get message() {
    return `organization ${this.uuid} does not exist`
  }
}

export class ServiceKeyExists extends Schema.TaggedError<ServiceKeyExists>()("ServiceKeyExists", {
  uuid: Schema.String
}, { httpApiStatus: 409 }) {
  override get message() {
    return `organization ${this.uuid} already has a service key; use rotate to replace it`
  }
}
