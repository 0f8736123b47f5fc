import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
    fileParallelism: true,
    // Each worker runs file after file and evaluates the modules they share once: with a fresh
    // worker per file, importing effect and src/ again was about 2 s of CPU a file (8 metrics
    // files: 29 s of CPU isolated, 13 s not), minutes over the suite on 2 cores. So a test file
    // must leave nothing behind (servers, timers, process.env), and an in-process metric it
    // asserts is either its own series or a difference (another file may count the same one).
    isolate: false
  }
})
