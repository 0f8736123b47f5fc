import { Schema } from "effect"

/** `GET /v1/auth/token` 200: a JWT valid for 15 minutes. */
export const TokenResponse = Schema.Struct({
  token: Schema.String,
  iss: Schema.String,
  sub: Schema.String,
  exp: Schema.Int
})
export type TokenResponse = typeof TokenResponse.Type
