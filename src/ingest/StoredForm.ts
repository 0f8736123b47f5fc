import { osvFormOf } from "../vulns/OsvForm.ts"
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
  const { osvDocument, record, ...rest } = out
  const osv = "osv" in out ? out.osv : osvFormOf(out.source, record, osvDocument)
  return {
    ...rest,
    updatedAt: out.updatedAt ?? rankOf(record),
    body: recordText(record),
    osv
  } as unknown as Normalised
}
