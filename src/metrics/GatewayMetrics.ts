import { type Context, Metric } from "effect"
import { withOrg } from "./OrgLabel.ts"
import { capped, seriesBy3 } from "./Series.ts"
import { UsageTap } from "./TokenUsage.ts"

/**
 * The gateway's upstream calls in /metrics (docs/operations.md): latency and
 * time to first byte by provider and surface, tokens by provider and model.
 * Custom providers are one `custom` provider (their slugs are an
 * organization's own names). With `VDB_METRICS_ORG_LABEL=on` each series also
 * has `org` (`OrgLabel`).
 */
const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]

/** Model names come from clients: a provider's first 100 names are labels, later ones `other`. */
const MODELS_PER_PROVIDER = 100

const histogramBy = (id: string, description: string) =>
  seriesBy3((provider, surface, org) =>
    Metric.histogram(id, { description, boundaries: UPSTREAM_BUCKETS, attributes: withOrg({ provider, surface }, org) })
  )

const latency = histogramBy(
  "vdb_gateway_upstream_duration_seconds",
  "Inference calls to providers by provider and surface: from sending the request to the answer's last byte"
)
const firstByte = histogramBy(
  "vdb_gateway_upstream_first_byte_seconds",
  "Inference calls to providers by provider and surface: from sending the request to the answer's headers"
)
const tokens = seriesBy3((provider, model, org) => ({
  input: Metric.counter("vdb_gateway_tokens_total", {
    description: "Tokens the providers reported in their answers, by provider, model and direction (input, output)",
    incremental: true,
    attributes: withOrg({ provider, model, direction: "input" }, org)
  }),
  output: Metric.counter("vdb_gateway_tokens_total", {
    description: "Tokens the providers reported in their answers, by provider, model and direction (input, output)",
    incremental: true,
    attributes: withOrg({ provider, model, direction: "output" }, org)
  })
}))
const modelCaps = new Map<string, (model: string) => string>()
const modelOf = (provider: string, model: string) => {
  let cap = modelCaps.get(provider)
  if (cap === undefined) modelCaps.set(provider, cap = capped(MODELS_PER_PROVIDER))
  return cap(model)
}

/**
 * One inference call to a provider, from sending it to the answer's last
 * byte: `headers` when the answer's headers arrive, `chunk` for each piece of
 * the body (read for token counts, never kept), `end` when the body is done.
 */
export class UpstreamCall {
  readonly usage = new UsageTap()
  readonly sentAt = performance.now()
  readonly context: Context.Context<never>
  readonly provider: string
  readonly surface: string
  readonly model: string | undefined
  /** `OrgLabel`'s value for the organization ("" when the label is off). */
  readonly org: string

  constructor(
    context: Context.Context<never>,
    provider: string,
    surface: string,
    model: string | undefined,
    org: string
  ) {
    this.context = context
    this.provider = provider
    this.surface = surface
    this.model = model
    this.org = org
  }

  headers(at: number): void {
    firstByte(this.provider, this.surface, this.org).updateUnsafe((at - this.sentAt) / 1000, this.context)
  }

  chunk(bytes: Uint8Array): void {
    this.usage.scan(bytes)
  }

  end(): void {
    const { context, usage } = this
    latency(this.provider, this.surface, this.org).updateUnsafe((performance.now() - this.sentAt) / 1000, context)
    if (usage.input < 0 && usage.output < 0) return
    const counters = tokens(this.provider, modelOf(this.provider, this.model ?? "unknown"), this.org)
    if (usage.input > 0) counters.input.updateUnsafe(usage.input, context)
    if (usage.output > 0) counters.output.updateUnsafe(usage.output, context)
  }
}

/** Nonces issued, and each sealed-block nonce checked by its outcome. */
export type NonceOutcome = "issued" | "valid" | "expired" | "unknown"

const nonceOutcomes = Object.fromEntries((["issued", "valid", "expired", "unknown"] as const).map((outcome) => [
  outcome,
  Metric.counter("vdb_gateway_nonces_total", {
    description: "Sealed-block nonces issued, and nonces checked by outcome (valid, expired, unknown)",
    incremental: true,
    attributes: { outcome }
  })
])) as Record<NonceOutcome, Metric.Counter<number>>

export const countNonces = (outcome: NonceOutcome, count: number) => Metric.update(nonceOutcomes[outcome], count)
