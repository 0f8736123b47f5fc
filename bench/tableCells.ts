/** The README benchmark table's row shape and cell formatting, shared by `table.ts` and the rows it imports. */
export type Json = any
export interface Row {
  readonly bench: string
  readonly figure: string
  readonly baseline: string
  readonly target: string
  /** undefined: the result says nothing either way. */
  readonly met: boolean | undefined
  readonly date: string | undefined
  readonly machine?: string | undefined
  /** The 1-minute load average when the run started, where the result records it. */
  readonly load?: number | undefined
}

export const n = (value: unknown, digits = 0) =>
  typeof value === "number" && Number.isFinite(value)
    ? value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : "—"
export const pct = (ratio: unknown) => (typeof ratio === "number" ? `${Math.round(ratio * 100)} %` : "—")
export const ms = (
  value: unknown
) => (typeof value === "number" ? `${value >= 0 ? "+" : ""}${value.toFixed(2)} ms` : "—")
export const day = (iso: unknown) => (typeof iso === "string" ? iso.slice(0, 16).replace("T", " ") : undefined)
export const machineOf = (json: Json) =>
  json?.machine?.cpus !== undefined
    ? `${json.machine.cpus} × ${String(json.machine.model).replace(/\s+/g, " ").trim()}`
    : undefined
export const loadOf = (json: Json): number | undefined => {
  const load = json?.loadAverage
  const first = Array.isArray(load) ? load[0] : Array.isArray(load?.start) ? load.start[0] : undefined
  return typeof first === "number" ? first : undefined
}
export const all = (...flags: Array<unknown>) =>
  flags.some((flag) => typeof flag !== "boolean") ? undefined : flags.every((flag) => flag === true)
