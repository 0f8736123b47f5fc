/**
 * `npm run bench -- NAME [ARGS...]` runs `bench/NAME.ts` with ARGS as its own
 * `process.argv.slice(2)` (each bench runs itself when loaded and writes
 * `bench/results/NAME.json`).
 */
const name = process.argv[2]
if (name === undefined || !/^[a-z][a-z0-9-]*$/.test(name)) {
  console.error("usage: npm run bench -- <name> [args...]   (e.g. ingest, sync, vdb, gateway)")
  process.exit(2)
}
process.argv.splice(2, 1)
const { dropAbandonedDatabases } = await import("./scratchDatabase.ts")
for (const dropped of await dropAbandonedDatabases()) {
  console.error(`dropped ${dropped}, left behind by a bench that no longer runs`)
}
await import(new URL(`./${name}.ts`, import.meta.url).href)
