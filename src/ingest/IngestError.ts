import { Schema } from "effect"

export class UnknownSource extends Schema.TaggedError<UnknownSource>()("UnknownSource", {
  source: Schema.String,
  known: Schema.Array(Schema.String)
}, { httpApiStatus: 400 }) {
  override get message() {
    return `unknown source "${this.source}" (known: ${this.known.join(", ")})`
  }
}

export class UnreadablePath extends Schema.TaggedError<UnreadablePath>()("UnreadablePath", {
  path: Schema.String,
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return `cannot read ${this.path}: ${this.reason}`
  }
}

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return this.reason
  }
}

/** Why an ingestion could not start; always raised before anything is written. */
export class IngestError extends Schema.TaggedError<IngestError>()("IngestError", {
  reason: Schema.Union([UnknownSource, UnreadablePath, InvalidRequest])
}) {
  override get message() {
    return this.reason.message
  }
}
