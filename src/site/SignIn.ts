import { Effect, Redacted } from "effect"
import type { HttpServerResponse } from "effect/http"
import type { Member } from "../members/Member.ts"
import { Members } from "../members/Members.ts"
import { type OpenedSession, Sessions } from "../members/Sessions.ts"
import { SignInThrottle } from "../members/SignInThrottle.ts"
import { renewCsrfCookie } from "./Csrf.ts"
import { withSessionCookie } from "./SiteHttp.ts"

export type SignInResult =
  | { readonly _tag: "signedIn"; readonly member: Member; readonly session: OpenedSession }
  | { readonly _tag: "throttled"; readonly retryAfter: number }
  | { readonly _tag: "wrongCredentials" }

/** One sign-in attempt, shared by the form and the JSON endpoint: throttle, verify, open a session. */
export const makeSignIn = Effect.gen(function*() {
  const throttle = yield* SignInThrottle
  const members = yield* Members
  const sessions = yield* Sessions
  return Effect.fn("Site.signIn")(function*(email: string, password: string, address: string) {
    const wait = yield* throttle.check(email, address)
    if (wait !== undefined) return { _tag: "throttled", retryAfter: wait } satisfies SignInResult
    const member = yield* members.verify(email, password)
    if (member === undefined) {
      yield* throttle.failed(email, address)
      return { _tag: "wrongCredentials" } satisfies SignInResult
    }
    const session = yield* sessions.open(member)
    if (session === undefined) {
      // Removed since the password check (a sign-in racing `member remove`): as for an unknown member.
      yield* throttle.failed(email, address)
      return { _tag: "wrongCredentials" } satisfies SignInResult
    }
    yield* throttle.succeeded(email)
    return { _tag: "signedIn", member, session } satisfies SignInResult
  })
})

/** A sign-in's answer: the session cookie, and a new sign-in form token (the form and the JSON endpoint alike). */
export const withNewSession = (
  response: HttpServerResponse.HttpServerResponse,
  session: OpenedSession,
  secure: boolean
) => renewCsrfCookie(withSessionCookie(response, Redacted.value(session.token), session.expiresAt, secure), secure)

/** Printable ASCII after one `/` that starts no `//` or `/\`: a path, nothing a browser could read as a host. */
const SAME_SITE_PATH = /^\/(?![/\\])[\x21-\x7e]*$/
const PROBE_ORIGIN = "http://probe.invalid"

/**
 * Only a same-site path may follow sign-in (no open redirect). Browsers drop tabs and newlines
 * from a `Location` before resolving it (`/\t/evil` is `//evil`), and Node refuses a header with
 * other control or non-Latin-1 characters (a 500 after the password was accepted), so anything
 * but printable ASCII is refused, and the path must still resolve to this origin.
 */
export const safeNext = (raw: string | null | undefined): string =>
  typeof raw === "string" && raw.length < 500 && SAME_SITE_PATH.test(raw) && !raw.includes("\\") &&
    new URL(raw, PROBE_ORIGIN).origin === PROBE_ORIGIN
    ? raw
    : "/device"
