import { Schema } from "effect"

/** No key stored for this provider and organization (gateway: 403 `provider_key_missing`). */
export class ProviderKeyMissing extends Schema.TaggedError<ProviderKeyMissing>()("ProviderKeyMissing", {
  provider: Schema.String
}, { httpApiStatus: 403 }) {
  override get message() {
    return `no ${this.provider} key is stored for this organization`
  }
}

/** The stored key cannot be opened: wrong master key, corrupted, or sealed for another provider (gateway: 502). */
export class ProviderKeyUnreadable extends Schema.TaggedError<ProviderKeyUnreadable>()("ProviderKeyUnreadable", {
  provider: Schema.String
}, { httpApiStatus: 502 }) {
  override get message() {
    return `the stored ${this.provider} key could not be decrypted`
  }
}
