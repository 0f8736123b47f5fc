/** What the firewall decided about a request; the inference log records it. */
export type Decision = "allow" | "redact" | "flag" | "block"

const DECISION_RANK: Record<Decision, number> = { allow: 0, flag: 1, redact: 2, block: 3 }

/** The stronger of two decisions (`block` > `redact` > `flag` > `allow`). */
export const strongest = (a: Decision, b: Decision): Decision => DECISION_RANK[a] >= DECISION_RANK[b] ? a : b
