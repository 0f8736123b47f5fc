import { Effect } from "effect"
import type { Organizations } from "../orgs/Organizations.ts"
import { OrgUnknown } from "../servicekeys/ServiceKeyErrors.ts"

/**
 * The organization an admin operation names, as its canonical UUID. Any
 * unknown or malformed UUID is `OrgUnknown`, so the CLI names it as such
 * instead of answering with an empty list. Each RPC group wraps it in its own error.
 */
export const existingOrg = (orgs: Organizations["Service"], org: string): Effect.Effect<string, OrgUnknown> =>
  orgs.show(org).pipe(
    Effect.map((o) => o.uuid as string),
    Effect.catchTag("OrgError", () => Effect.fail(new OrgUnknown({ uuid: org })))
  )
