/**
 * CVSS base scores from vector strings, for sources that publish only the
 * vector (OSV/GHSA `severity`). Formulas from the FIRST CVSS v3.1 and v2.0
 * specifications; v4.0 scores need the macro-vector table and are not derived.
 */

const roundUp1 = (x: number): number => {
  const i = Math.round(x * 100000)
  return i % 10000 === 0 ? i / 100000 : (Math.floor(i / 10000) + 1) / 10
}

const parseVector = (vector: string): Map<string, string> => {
  const out = new Map<string, string>()
  for (const part of vector.split("/")) {
    const [k, v] = part.split(":")
    if (k !== undefined && v !== undefined) out.set(k, v)
  }
  return out
}

export const severityV3 = (score: number): "NONE" | "LOW" | "MEDIUM" | "HIGH" | "CRITICAL" =>
  score === 0 ? "NONE" : score < 4 ? "LOW" : score < 7 ? "MEDIUM" : score < 9 ? "HIGH" : "CRITICAL"

export const severityV2 = (score: number): "LOW" | "MEDIUM" | "HIGH" =>
  score < 4 ? "LOW" : score < 7 ? "MEDIUM" : "HIGH"

const V3 = {
  AV: { N: 0.85, A: 0.62, L: 0.55, P: 0.2 },
  AC: { L: 0.77, H: 0.44 },
  UI: { N: 0.85, R: 0.62 },
  CIA: { H: 0.56, L: 0.22, N: 0 }
} as const

const pick = <T extends Record<string, number>>(table: T, key: string | undefined): number | undefined =>
  key !== undefined && key in table ? table[key as keyof T] as number : undefined

/** CVSS v3.0/v3.1 base score, or undefined when the vector is incomplete. */
export const baseScoreV3 = (vector: string): number | undefined => {
  const m = parseVector(vector)
  const scope = m.get("S")
  const av = pick(V3.AV, m.get("AV"))
  const ac = pick(V3.AC, m.get("AC"))
  const ui = pick(V3.UI, m.get("UI"))
  const c = pick(V3.CIA, m.get("C"))
  const i = pick(V3.CIA, m.get("I"))
  const a = pick(V3.CIA, m.get("A"))
  const prKey = m.get("PR")
  if (
    (scope !== "U" && scope !== "C") || av === undefined || ac === undefined || ui === undefined ||
    c === undefined || i === undefined || a === undefined
  ) return undefined
  const pr = prKey === "N"
    ? 0.85
    : prKey === "L"
    ? (scope === "C" ? 0.68 : 0.62)
    : prKey === "H"
    ? (scope === "C" ? 0.5 : 0.27)
    : undefined
  if (pr === undefined) return undefined
  const iss = 1 - (1 - c) * (1 - i) * (1 - a)
  const impact = scope === "U" ? 6.42 * iss : 7.52 * (iss - 0.029) - 3.25 * Math.pow(iss - 0.02, 15)
  const exploitability = 8.22 * av * ac * pr * ui
  if (impact <= 0) return 0
  return scope === "U"
    ? roundUp1(Math.min(impact + exploitability, 10))
    : roundUp1(Math.min(1.08 * (impact + exploitability), 10))
}

const V2 = {
  AV: { L: 0.395, A: 0.646, N: 1 },
  AC: { H: 0.35, M: 0.61, L: 0.71 },
  Au: { M: 0.45, S: 0.56, N: 0.704 },
  CIA: { N: 0, P: 0.275, C: 0.66 }
} as const

/** CVSS v2.0 base score, or undefined when the vector is incomplete. */
export const baseScoreV2 = (vector: string): number | undefined => {
  const m = parseVector(vector.replace(/^\(|\)$/g, ""))
  const av = pick(V2.AV, m.get("AV"))
  const ac = pick(V2.AC, m.get("AC"))
  const au = pick(V2.Au, m.get("Au"))
  const c = pick(V2.CIA, m.get("C"))
  const i = pick(V2.CIA, m.get("I"))
  const a = pick(V2.CIA, m.get("A"))
  if ([av, ac, au, c, i, a].some((x) => x === undefined)) return undefined
  const impact = 10.41 * (1 - (1 - c!) * (1 - i!) * (1 - a!))
  const exploitability = 20 * av! * ac! * au!
  const f = impact === 0 ? 0 : 1.176
  return Math.round(((0.6 * impact) + (0.4 * exploitability) - 1.5) * f * 10) / 10
}
