import { Schema } from "effect"

export class UnknownUserCode
  extends Schema.TaggedError<UnknownUserCode>()("UnknownUserCode", {}, { httpApiStatus: 404 })
{
  override get message() {
    return "no sign-in request has this code; check it and try again"
  }
}

export class ExpiredUserCode
  extends Schema.TaggedError<ExpiredUserCode>()("ExpiredUserCode", {}, { httpApiStatus: 410 })
{
  override get message() {
    return "this code has expired; start the sign-in again from your terminal"
  }
}

export class UsedUserCode extends Schema.TaggedError<UsedUserCode>()("UsedUserCode", {}, { httpApiStatus: 409 }) {
  override get message() {
    return "this code was already approved or denied"
  }
}

/** The member entered too many unknown codes (ApprovalThrottle): no code is looked at until `retryAfter` seconds pass. */
export class TooManyWrongCodes extends Schema.TaggedError<TooManyWrongCodes>()("TooManyWrongCodes", {
  retryAfter: Schema.Int
}, { httpApiStatus: 429 }) {
  override get message() {
    return "too many wrong codes; try again later"
  }
}

/** Why a member cannot act on a user code. */
export class DeviceError extends Schema.TaggedError<DeviceError>()("DeviceError", {
  reason: Schema.Union([UnknownUserCode, ExpiredUserCode, UsedUserCode, TooManyWrongCodes])
}) {
  override get message() {
    return this.reason.message
  }
}
