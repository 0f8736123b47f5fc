import { recordText } from "../vulns/RecordText.ts"
import { rankOf } from "../vulns/StoreRows.ts"
import type { Normalised } from "./Upstream.ts"

/**
 * An output as the normalising worker posts it back: a record leaves as its
 * stored text (posting the text is cheaper than cloning the object, and it is
 * what gets stored). `bench/ingest.ts` prepares its store floor the same way.
 */
export const storedForm = (out: Normalised): Normalised => {
  if (out.kind !== "record") return out
  const { record, ...rest } = out
  return { ...rest, updatedAt: out.updatedAt ?? rankOf(record), body: recordText(record) } as unknown as Normalised
}
