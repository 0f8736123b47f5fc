import { randomBytes } from "node:crypto"
import { Effect, Exit, Scope } from "effect"
import { throwawayDatabase } from "../support/database.ts"
import { type RunningServer, startServer, tempDataDir } from "../support/processes.ts"

export interface McpServerUnderTest {
  readonly server: RunningServer
  /** What `bin/vdb` commands of this test file run with (the same database and master key). */
  readonly env: Record<string, string>
  readonly mcpUrl: string
  /** Stops the server, then drops its database. */
  readonly stop: () => Promise<void>
}

/** `bin/vdb serve mcp` on a throwaway PostgreSQL database of its own, for one test file. */
export const startMcpServer = async (): Promise<McpServerUnderTest> => {
  const scope = Effect.runSync(Scope.make())
  const db = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
  const env = { DATABASE_URL: db.url, VDB_MASTER_KEY: randomBytes(32).toString("base64"), VDB_DATA_DIR: tempDataDir(), VDB_LOG_LEVEL: "Warn" }
  const server = await startServer(env, ["mcp"]).catch(async (error) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  })
  return {
    server,
    env,
    mcpUrl: `http://127.0.0.1:${server.ports.mcp}/mcp`,
    stop: async () => {
      await server.stop()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}
