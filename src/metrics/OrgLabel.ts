import { Config, Context, Effect, Layer } from "effect"
import { capped } from "./Series.ts"

/**
 * The opt-in organization label (docs/operations.md): off by default, so no
 * series carries an organization id. `VDB_METRICS_ORG_LABEL=on` adds `org` (the
 * organization's id) to the gateway's per-organization series, for the first
 * `VDB_METRICS_ORG_LABEL_LIMIT` organizations (50) this process sees; the rest
 * are `other`. Each process counts its own first organizations.
 */
export class OrgLabel extends Context.Reference<(orgUuid: string) => string>("vdb/metrics/OrgLabel", {
  defaultValue: () => () => ""
}) {
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const on = yield* Config.Literals(["on", "off"], "VDB_METRICS_ORG_LABEL").pipe(Config.withDefault("off" as const))
    const limit = yield* Config.Int("VDB_METRICS_ORG_LABEL_LIMIT").pipe(Config.withDefault(50))
    return on === "on" ? Layer.succeed(OrgLabel)(capped(Math.max(0, limit))) : Layer.empty
  }))
}

/** The attributes with `org` added when the label is on (an empty value means off). */
export const withOrg = (attributes: Record<string, string>, org: string): Record<string, string> =>
  org === "" ? attributes : { ...attributes, org }
