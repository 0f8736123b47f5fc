import { Effect } from "effect"
import { HttpEffect, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { BadRequest } from "../../../schema/ErrorBody.ts"
import { CurrentOrg } from "../../auth/CurrentOrg.ts"
import { Jwt } from "../../auth/Jwt.ts"
import { Api } from "../Api.ts"
import { signInBindingOf } from "../AuthenticationLive.ts"

export const AuthHandlers = HttpApiBuilder.group(
  Api,
  "auth",
  Effect.fn(function*(handlers) {
    const jwt = yield* Jwt
    return handlers.handleAll({
      token: () =>
        Effect.flatMap(CurrentOrg, (org) => {
          const binding = signInBindingOf(org)
          // `SignedRequestLive` records it for every request it lets through: a missing one is a bug, not a client's error.
          return binding === undefined
            ? Effect.die(new Error("sign-in without a verified secret"))
            : jwt.issue(org.uuid, binding)
        }),
      // No middleware on this endpoint sets the API's `nosniff`.
      tokenPost: () =>
        HttpEffect.appendPreResponseHandler((_request, response) =>
          Effect.succeed(HttpServerResponse.setHeader(response, "x-content-type-options", "nosniff"))
        ).pipe(Effect.andThen(
          Effect.fail(
            new BadRequest({
              message:
                "POST is not supported: send GET /v1/auth/token with an AWS4-HMAC-SHA512 signed Authorization header"
            })
          )
        ))
    })
  })
)
