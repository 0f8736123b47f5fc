import { timingSafeEqual } from "node:crypto"
import {
  canonicalRequest,
  formatAmzDate,
  hashHex,
  parseAmzDate,
  signatureOf,
  type SigV4Scope,
  stringToSign
} from "./SigV4.ts"

/**
 * The service's sign-in request: `GET /v1/auth/token` signed with
 * `AWS4-HMAC-SHA512`, credential `<org_uuid>/<yyyymmdd>/us-east-1/vdb/aws4_request`
 * and only `x-amz-date` signed (host excluded on purpose, so proxies may rewrite it).
 */
export const TOKEN_ALGORITHM = "AWS4-HMAC-SHA512"
export const TOKEN_REGION = "us-east-1"
export const TOKEN_SERVICE = "vdb"
export const MAX_SKEW_MILLIS = 5 * 60_000

const SIGNED_HEADERS = ["x-amz-date"] as const
const EMPTY_PAYLOAD_SHA512 = hashHex("sha512", "")

const canonicalFor = (path: string, query: string, amzDate: string) =>
  canonicalRequest(
    { method: "GET", path, query, headers: [["x-amz-date", amzDate]], payloadHash: EMPTY_PAYLOAD_SHA512 },
    SIGNED_HEADERS,
    { normalize: true }
  )

const sign = (secret: string, scope: SigV4Scope, path: string, query: string, amzDate: string) =>
  signatureOf("sha512", secret, scope, stringToSign("sha512", amzDate, scope, canonicalFor(path, query, amzDate)))

/** The client side: headers for a token request at `now`. */
export const signTokenRequest = (options: {
  readonly orgUuid: string
  readonly secret: string
  /** The request path as the server sees it, e.g. `/v1/auth/token`. */
  readonly path: string
  readonly query?: string
  readonly now: number
}): { readonly authorization: string; readonly amzDate: string } => {
  const amzDate = formatAmzDate(options.now)
  const scope = { date: amzDate.slice(0, 8), region: TOKEN_REGION, service: TOKEN_SERVICE }
  const signature = sign(options.secret, scope, options.path, options.query ?? "", amzDate)
  return {
    amzDate,
    authorization:
      `${TOKEN_ALGORITHM} Credential=${options.orgUuid}/${scope.date}/${TOKEN_REGION}/${TOKEN_SERVICE}/aws4_request, SignedHeaders=x-amz-date, Signature=${signature}`
  }
}

export type TokenRequestCheck =
  | { readonly _tag: "Rejected"; readonly reason: string }
  | {
    readonly _tag: "Parsed"
    readonly orgUuid: string
    /** Constant-time check of the signature under the organization's secret. */
    readonly verify: (secret: string) => boolean
  }

const AUTHORIZATION =
  /^AWS4-HMAC-SHA512 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/([^/,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$/

const rejected = (reason: string): TokenRequestCheck => ({ _tag: "Rejected", reason })

/**
 * The server side, everything that needs no secret: shape, scope, signed
 * header set and clock skew. The signature itself is checked by `verify`
 * once the organization's secret is known.
 */
export const verifyTokenRequest = (request: {
  readonly authorization: string | undefined
  readonly amzDate: string | undefined
  readonly path: string
  readonly query: string
  readonly now: number
}): TokenRequestCheck => {
  if (request.authorization === undefined || request.authorization === "") {
    return rejected("missing signed Authorization header")
  }
  const match = AUTHORIZATION.exec(request.authorization.trim())
  if (match === null) return rejected("Authorization is not an AWS4-HMAC-SHA512 signature")
  const [, orgUuid, date, region, service, terminator, signedHeaders, signature] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string
  ]
  if (region !== TOKEN_REGION || service !== TOKEN_SERVICE || terminator !== "aws4_request") {
    return rejected("credential scope must be <org_uuid>/<yyyymmdd>/us-east-1/vdb/aws4_request")
  }
  if (signedHeaders !== "x-amz-date") return rejected("SignedHeaders must be exactly x-amz-date")
  if (request.amzDate === undefined) return rejected("missing X-Amz-Date header")
  const at = parseAmzDate(request.amzDate)
  if (at === undefined) return rejected("X-Amz-Date must be YYYYMMDDTHHMMSSZ")
  if (request.amzDate.slice(0, 8) !== date) return rejected("credential date does not match X-Amz-Date")
  if (Math.abs(request.now - at) > MAX_SKEW_MILLIS) {
    return rejected("X-Amz-Date is more than 5 minutes from server time")
  }
  if (signature.length !== 128) return rejected("signature is not an AWS4-HMAC-SHA512 signature")
  const amzDate = request.amzDate
  return {
    _tag: "Parsed",
    orgUuid: orgUuid.toLowerCase(),
    verify: (secret) => {
      const expected = Buffer.from(
        sign(secret, { date, region, service }, request.path, request.query, amzDate),
        "utf8"
      )
      const presented = Buffer.from(signature, "utf8")
      return expected.length === presented.length && timingSafeEqual(expected, presented)
    }
  }
}
