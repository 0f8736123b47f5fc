import { Schema } from "effect"

/** The database behind a gateway check cannot be reached; the gateway answers 503 and never passes the request. */
export class BackendUnavailable extends Schema.TaggedError<BackendUnavailable>()("BackendUnavailable", {
  backend: Schema.Literals(["authentication", "policy", "provider", "catalog"])
}, { httpApiStatus: 503 }) {
  override get message() {
    return `${this.backend} backend unavailable`
  }
}

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
