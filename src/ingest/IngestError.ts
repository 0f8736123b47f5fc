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

/** FIFOs, devices, sockets, `<(…)`: reading them could block or never end, so only the CLI's `-` reads a stream. */
export class UnsupportedPath extends Schema.TaggedError<UnsupportedPath>()("UnsupportedPath", {
  path: Schema.String,
  kind: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return `${this.path} is a ${this.kind}: only regular files, directories and - (standard input) can be ingested; pipe a stream in instead (… | vdb ingest SOURCE -)`
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
  reason: Schema.Union([UnknownSource, UnreadablePath, UnsupportedPath, InvalidRequest])
}) {
  override get message() {
    return this.reason.message
  }
}

/** The server went away while a run was streaming (stopped, killed or restarted). */
export class IngestInterrupted extends Schema.TaggedError<IngestInterrupted>()("IngestInterrupted", {}) {
  override get message() {
    return "the vdb server stopped during the ingest; run the same command again to resume (items already stored are kept and reported unchanged)"
  }
}
