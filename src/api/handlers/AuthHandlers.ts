import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BadRequest } from "../../../schema/ErrorBody.ts"
import { Jwt } from "../../auth/Jwt.ts"
import { Api } from "../Api.ts"
import { CurrentOrg } from "../ApiSecurity.ts"

export const AuthHandlers = HttpApiBuilder.group(Api, "auth", Effect.fn(function*(handlers) {
  const jwt = yield* Jwt
  return handlers.handleAll({
    token: () => Effect.flatMap(CurrentOrg, (org) => jwt.issue(org.uuid)),
    tokenPost: () =>
      Effect.fail(new BadRequest({ message: "POST is not supported: send GET /v1/auth/token with an AWS4-HMAC-SHA512 signed Authorization header" }))
  })
}))
