/**
 * The Node flags and environment `bin/vdb` starts the server with (keep the
 * two in step): benchmarks measure the server as it is deployed. Each reads
 * the same override variable as `bin/vdb`.
 */
export const SERVER_NODE_FLAGS: ReadonlyArray<string> = [
  `--max-semi-space-size=${process.env.VDB_NODE_SEMI_SPACE_MIB ?? 16}`,
  "--no-allocation-site-pretenuring"
]

export const SERVER_ENV: Readonly<Record<string, string>> = {
  MALLOC_TRIM_THRESHOLD_: process.env.MALLOC_TRIM_THRESHOLD_ ?? "1048576",
  MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? "33554432",
  // Not the deployed default: a bench measures one thing, and never reaches the publishers (loopback only).
  VDB_SYNC: "off"
}
