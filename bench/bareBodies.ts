// The floor for `/v1/query` on this machine (bench/query.ts): a bare `node:http` server in a child
// process that answers each of the bench's requests with its answer's bytes, read off vdb beforehand
// (identity, and gzip for a request that accepts it), and does nothing else: no authentication, no
// usage log, no cache, no metrics. Measured at the same 32 clients in the same run, its p99 is what
// moving these bodies alone costs here, so vdb's p99 can be read against it.
import { type ChildProcess, fork } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export interface BareAnswer {
  /** The request's JSON body, byte for byte as the bench sends it. */
  readonly request: string
  readonly identity: Buffer
  readonly gzip: Buffer
}

export interface BareBodies {
  readonly port: number
  readonly pid: number | undefined
  readonly stop: () => Promise<void>
}

/** A POST's response body as the server sent it (no decoding: a gzip answer stays gzip), over `node:http`. */
export const rawPost = (
  port: number,
  path: string,
  authorization: string,
  body: string,
  headers: Record<string, string>
) =>
  new Promise<Buffer>((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        headers: { authorization, "content-type": "application/json", ...headers }
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => resolve(Buffer.concat(chunks)))
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    req.end(body)
  })

/** Starts the bare server on `port` with `answers`; resolves once it listens. */
export const startBareBodies = (answers: ReadonlyArray<BareAnswer>, port: number) =>
  new Promise<BareBodies>((resolve, reject) => {
    const dir = mkdtempSync(join(tmpdir(), "vdb-bench-bare-"))
    answers.forEach((a, n) => {
      writeFileSync(join(dir, `${n}.json`), a.identity)
      writeFileSync(join(dir, `${n}.gz`), a.gzip)
    })
    writeFileSync(join(dir, "requests.json"), JSON.stringify(answers.map((a) => a.request)))
    const child: ChildProcess = fork(fileURLToPath(import.meta.url), ["serve", dir, String(port)], {
      stdio: ["ignore", "ignore", "inherit", "ipc"]
    })
    const stop = () =>
      new Promise<void>((done) => {
        child.once("exit", () => done())
        child.kill("SIGINT")
      }).finally(() => rmSync(dir, { recursive: true, force: true }))
    child.once("error", reject)
    child.once("message", () => resolve({ port, pid: child.pid, stop }))
  })

const serve = (dir: string, port: number) => {
  const requests = JSON.parse(readFileSync(join(dir, "requests.json"), "utf8")) as Array<string>
  const byRequest = new Map(requests.map((request, n) => [
    request,
    { identity: readFileSync(join(dir, `${n}.json`)), gzip: readFileSync(join(dir, `${n}.gz`)) }
  ]))
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const answer = byRequest.get(Buffer.concat(chunks).toString("utf8"))
      if (answer === undefined) {
        res.writeHead(404).end()
        return
      }
      const gzip = /\bgzip\b/.test(req.headers["accept-encoding"] ?? "")
      const body = gzip ? answer.gzip : answer.identity
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": String(body.length),
        ...(gzip ? { "content-encoding": "gzip" } : {}),
        vary: "Accept-Encoding"
      })
      res.end(body)
    })
  })
  process.on("SIGINT", () => process.exit(0))
  server.listen(port, "127.0.0.1", () => process.send?.("ready"))
}

const [role, dir, port] = process.argv.slice(2)
if (role === "serve" && dir !== undefined) serve(dir, Number(port))
