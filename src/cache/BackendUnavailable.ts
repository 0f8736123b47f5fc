import { Schema } from "effect"

/** The database behind a gateway check cannot be reached; the gateway answers 503 and never passes the request. */
export class BackendUnavailable extends Schema.TaggedError<BackendUnavailable>()("BackendUnavailable", {
  backend: Schema.Literals(["authentication", "policy", "provider", "catalog", "database"])
}, { httpApiStatus: 503 }) {
  override get message() {
    return `${this.backend} backend unavailable`
  }
}
