import { Effect, Redacted } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { formatApiKey } from "../auth/ApiKey.ts"
import { ApprovalThrottle } from "../device/ApprovalThrottle.ts"
import { AuthorizeLimiter } from "../device/AuthorizeLimiter.ts"
import { clientText, type PollOutcome } from "../device/DeviceGrant.ts"
import { DeviceGrants } from "../device/DeviceGrants.ts"
import { Members } from "../members/Members.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { DEVICE_CODE_GRANT_TYPE, SiteApi } from "./Api.ts"
import {
  clientAddress,
  crossOrigin,
  errorJson,
  isFormRequest,
  isJsonRequest,
  jsonGuard,
  jsonObjectBody,
  notJson,
  okJson,
  originAllowed,
  readableForm,
  signedInMember,
  siteOrigin,
  UNREADABLE_BODY
} from "./SiteHttp.ts"

/** `vdb-cli/0.1.0 (linux)` → name `vdb-cli`, version `0.1.0`: the first product token of the User-Agent. */
const fromUserAgent = (userAgent: string | undefined) => {
  const token = (userAgent ?? "").trim().split(/\s+/)[0] ?? ""
  const slash = token.indexOf("/")
  return slash === -1 ? { name: token, version: "" } : { name: token.slice(0, slash), version: token.slice(slash + 1) }
}

const POLL_DESCRIPTIONS: Record<Exclude<PollOutcome["_tag"], "issued">, string> = {
  authorization_pending: "the user has not approved this request yet; poll again after the interval",
  slow_down: "polling too fast: add 5 seconds to the interval",
  expired_token: "the device code has expired; start again",
  access_denied: "the request was denied, or this device code was already used",
  invalid_grant: "unknown device code"
}

const decision =
  (kind: "approve" | "deny", throttle: ApprovalThrottle["Service"]) =>
  ({ request }: { readonly request: HttpServerRequest.HttpServerRequest }) =>
    Effect.gen(function*() {
      // Spec 3: approving without a session is a 401, whatever the body; the origin is checked first.
      if (!(yield* originAllowed(request))) return crossOrigin()
      const member = yield* signedInMember(request)
      if (member === undefined) return errorJson(401, "unauthenticated", "sign in first (POST /api/site/v1/session)")
      if (!isJsonRequest(request)) return notJson()
      const body = yield* jsonObjectBody(request)
      if (body === undefined || typeof body.user_code !== "string") {
        return errorJson(400, "invalid_request", "the body must be a JSON object with user_code")
      }
      const grants = yield* DeviceGrants
      const decided = kind === "approve"
        ? grants.approve(body.user_code, member.uuid)
        : grants.deny(body.user_code, member.uuid)
      return yield* throttle.guard(member.uuid, decided).pipe(
        Effect.map((grant) =>
          okJson({ status: kind === "approve" ? "approved" : "denied", user_code: grant.userCode })
        ),
        // The refusal as the domain raised it: the contract renders it with the status it declares.
        Effect.mapError((error) => error.reason)
      )
    })

/** RFC 8628 §3.4: JSON `{device_code}` or the form-encoded request with its grant_type. */
const tokenRequest = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
  if (isFormRequest(request)) {
    const form = yield* readableForm(request)
    if (form === undefined) return "unreadable" as const
    // RFC 6749 3.2: a parameter sent twice is a malformed request, whichever copy a server would read.
    if (form.getAll("grant_type").length > 1 || form.getAll("device_code").length > 1) return "repeated" as const
    return {
      grantType: form.get("grant_type") ?? undefined,
      deviceCode: form.get("device_code") ?? undefined,
      form: true
    }
  }
  if (isJsonRequest(request)) {
    const body = yield* jsonObjectBody(request)
    if (body === undefined) return undefined
    return {
      grantType: typeof body.grant_type === "string" ? body.grant_type : undefined,
      deviceCode: typeof body.device_code === "string" ? body.device_code : undefined,
      form: false
    }
  }
  return undefined
})

export const DeviceHandlers = HttpApiBuilder.group(
  SiteApi,
  "device",
  Effect.fn(function*(handlers) {
    const grants = yield* DeviceGrants
    const limiter = yield* AuthorizeLimiter
    const members = yield* Members
    const orgs = yield* Organizations
    const throttle = yield* ApprovalThrottle

    // The credential for a redeemed grant: the approving member's organization's API key.
    const credential = (memberUuid: string) =>
      Effect.gen(function*() {
        const member = yield* members.find(memberUuid)
        const { org, secret } = yield* orgs.secretOf(member.orgUuid)
        if (!org.isActive) return errorJson(400, "access_denied", "the organization is inactive")
        return okJson({
          type: "apikey",
          org_uuid: org.uuid,
          orgUuid: org.uuid,
          api_key: formatApiKey(org.uuid, Redacted.value(secret))
        })
      }).pipe(Effect.catchTags({
        MemberError: () => Effect.succeed(errorJson(400, "access_denied", "the approving member no longer exists")),
        OrgError: () => Effect.succeed(errorJson(400, "access_denied", "the organization no longer exists"))
      }))

    return handlers
      .handleRaw("authorize", ({ request }) =>
        Effect.gen(function*() {
          // Every call counts, well-formed or not: the limiter is what stops code farming.
          const wait = yield* limiter.take(yield* clientAddress(request))
          if (wait !== undefined) {
            return errorJson(429, "too_many_requests", "too many sign-in requests from this address; wait and retry", {
              "retry-after": String(wait)
            })
          }
          const refused = yield* jsonGuard(request)
          if (refused !== undefined) return refused
          const body = yield* jsonObjectBody(request)
          if (body === undefined) {
            return errorJson(400, "invalid_request", "the body must be a JSON object ({} is fine)")
          }
          const agent = fromUserAgent(request.headers["user-agent"])
          const issued = yield* grants.authorize({
            name: clientText(body.client_name, clientText(agent.name, "unknown client")),
            version: clientText(body.client_version, clientText(agent.version, "")),
            address: yield* clientAddress(request)
          })
          const origin = yield* siteOrigin(request)
          return okJson({
            device_code: Redacted.value(issued.deviceCode),
            user_code: issued.userCode,
            verification_uri: `${origin}/device`,
            verification_uri_complete: `${origin}/device?code=${encodeURIComponent(issued.userCode)}`,
            expires_in: issued.expiresIn,
            interval: issued.interval
          })
        }))
      .handleRaw("approve", decision("approve", throttle))
      .handleRaw("deny", decision("deny", throttle))
      .handleRaw("token", ({ request }) =>
        Effect.gen(function*() {
          if (!(yield* originAllowed(request))) {
            return errorJson(403, "invalid_origin", "cross-origin requests are refused")
          }
          const parsed = yield* tokenRequest(request)
          if (parsed === undefined) {
            return errorJson(400, "invalid_request", "send JSON {device_code} or the RFC 8628 form-encoded request")
          }
          if (parsed === "unreadable") {
            return errorJson(400, "invalid_request", UNREADABLE_BODY)
          }
          if (parsed === "repeated") {
            return errorJson(400, "invalid_request", "grant_type and device_code may each be sent once")
          }
          // RFC 6749 5.2: a missing required parameter is invalid_request; unsupported_grant_type is for one sent.
          if (parsed.form && parsed.grantType === undefined) {
            return errorJson(400, "invalid_request", "grant_type is missing")
          }
          if ((parsed.form || parsed.grantType !== undefined) && parsed.grantType !== DEVICE_CODE_GRANT_TYPE) {
            return errorJson(400, "unsupported_grant_type", `grant_type must be ${DEVICE_CODE_GRANT_TYPE}`)
          }
          if (parsed.deviceCode === undefined || parsed.deviceCode.length === 0 || parsed.deviceCode.length > 200) {
            return errorJson(400, "invalid_request", "device_code is missing")
          }
          const outcome = yield* grants.poll(parsed.deviceCode)
          if (outcome._tag === "issued") {
            return yield* credential(outcome.memberUuid)
          }
          return errorJson(400, outcome._tag, POLL_DESCRIPTIONS[outcome._tag])
        }))
  })
)

export const RetiredHandlers = HttpApiBuilder.group(
  SiteApi,
  "retired",
  (handlers) =>
    Effect.succeed(handlers.handleRaw("authCodePoll", () =>
      Effect.succeed(
        HttpServerResponse.jsonUnsafe(
          { error: "not_found", error_description: "retired: use POST /api/site/v1/cli/device/token" },
          { status: 404 }
        )
      )))
)
