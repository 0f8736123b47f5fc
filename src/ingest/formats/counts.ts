export { countRecord, NO_DESCRIPTION } from "../../vulns/RecordCounts.ts"
