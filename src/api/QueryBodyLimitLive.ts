import { Effect, Layer } from "effect"
import { ByteSize } from "effect"
import { HttpIncomingMessage, HttpServerError, HttpServerRequest } from "effect/http"
import { BadRequest } from "../../schema/ErrorBody.ts"
import { PayloadTooLarge } from "../../schema/OsvQuery.ts"
import { declaresOver } from "../server/BodyCap.ts"
import { BATCH_BODY_MAX_BYTES, QUERY_BODY_MAX_BYTES, QueryBodyLimit } from "./OsvApi.ts"

const capOf = (url: string) => url.includes("/querybatch") ? BATCH_BODY_MAX_BYTES : QUERY_BODY_MAX_BYTES

const tooLarge = (max: number) => new PayloadTooLarge({ message: `request body over ${max / 1024} KiB` })

/**
 * The package queries' body caps: a declared length over the cap is refused
 * before anything is read, an undeclared one as soon as the cap is passed
 * (the platform's `MaxBodySize`, reported as a defect of the body's decoding).
 */
export const QueryBodyLimitLive = Layer.succeed(QueryBodyLimit)((httpEffect) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const max = capOf(request.url)
    if (declaresOver(request.headers, max)) return Effect.fail(tooLarge(max))
    return Effect.catchDefect(
      Effect.provideService(httpEffect, HttpIncomingMessage.MaxBodySize, ByteSize.fromInputUnsafe(max)),
      (defect) =>
        HttpServerError.isHttpServerError(defect) && defect.reason._tag === "RequestParseError"
          ? Effect.fail(
            defect.reason.reason === "BodyTooLarge"
              ? tooLarge(max)
              : new BadRequest({ message: "the request body could not be read" })
          )
          : Effect.die(defect)
    )
  })
)
