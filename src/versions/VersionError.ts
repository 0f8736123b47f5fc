import { Schema } from "effect"

/** A version text quoted back in one line: printable ASCII, at most 64 characters, else not shown. */
const quote = (text: string) => (/^[\x20-\x7e]{1,64}$/.test(text) ? ` ${JSON.stringify(text)}` : "")

export class UnsupportedEcosystem extends Schema.TaggedError<UnsupportedEcosystem>()("UnsupportedEcosystem", {
  ecosystem: Schema.String,
  supported: Schema.Array(Schema.String)
}, { httpApiStatus: 400 }) {
  override get message() {
    return `ecosystem${quote(this.ecosystem)} is not supported for version ordering (supported: ${
      this.supported.join(", ")
    })`
  }
}

export class InvalidVersion extends Schema.TaggedError<InvalidVersion>()("InvalidVersion", {
  ecosystem: Schema.String,
  version: Schema.String,
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return `version${quote(this.version)} is not a ${this.ecosystem} version: it ${this.reason}`
  }
}

/** Every refusal of the versions domain; `message` is one line fit for a terminal or an API error. */
export class VersionError extends Schema.TaggedError<VersionError>()("VersionError", {
  reason: Schema.Union([UnsupportedEcosystem, InvalidVersion])
}) {
  override get message() {
    return this.reason.message
  }
}
