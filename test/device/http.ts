import { spawn } from "node:child_process"
import { type IncomingMessage, request } from "node:http"
import { VDB } from "../support/processes.ts"

export interface Reply {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly json: any
}

/**
 * One HTTP request from a chosen loopback source address (127.0.0.0/8 is all
 * this machine), so tests can stand for different clients of the per-address
 * limiter and throttles.
 */
/** Collects a response's text and, when it parses, its JSON. */
const readReply = (res: IncomingMessage, done: (reply: Reply) => void) => {
  let text = ""
  res.setEncoding("utf8")
  res.on("data", (d) => (text += d))
  res.on("end", () => {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    done({ status: res.statusCode ?? 0, headers: res.headers, text, json })
  })
}

export const http = (
  port: number,
  method: string,
  path: string,
  options: { readonly headers?: Record<string, string>; readonly body?: string; readonly from?: string } = {}
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, method, path, headers: options.headers, localAddress: options.from ?? "127.0.0.1" },
      (res) => readReply(res, resolve)
    )
    req.on("error", reject)
    req.end(options.body)
  })

/**
 * A chunked body that keeps arriving: `bytes` of it are sent and the request
 * is never ended. The reply is what the server answers without waiting for
 * the body's end (a server that buffered the whole body first never answers).
 */
export const endlessBody = (
  port: number,
  path: string,
  contentType: string,
  bytes: number,
  from = "127.0.0.1"
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const headers = { "content-type": contentType }
    const req = request({ host: "127.0.0.1", port, method: "POST", path, headers, localAddress: from }, (res) =>
      readReply(res, (reply) => {
        req.destroy()
        resolve(reply)
      }))
    req.on("error", (error) => (req.destroyed ? undefined : reject(error)))
    req.write("x".repeat(bytes))
  })

export const postJson = (
  port: number,
  path: string,
  body: unknown,
  options: { headers?: Record<string, string>; from?: string } = {}
) =>
  http(port, "POST", path, {
    headers: { "content-type": "application/json", ...options.headers },
    body: JSON.stringify(body),
    ...(options.from !== undefined && { from: options.from })
  })

export const postForm = (
  port: number,
  path: string,
  form: Record<string, string>,
  options: { headers?: Record<string, string>; from?: string } = {}
) =>
  http(port, "POST", path, {
    headers: { "content-type": "application/x-www-form-urlencoded", ...options.headers },
    body: new URLSearchParams(form).toString(),
    ...(options.from !== undefined && { from: options.from })
  })

/** `name=value` pairs of the Set-Cookie headers. */
export const cookiesOf = (reply: Reply): Record<string, string> => {
  const raw = reply.headers["set-cookie"]
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]
  return Object.fromEntries(list.map((c) => c.split(";")[0]!.split("=")).map(([k, ...v]) => [k!, v.join("=")]))
}

export const setCookieHeaders = (reply: Reply): Array<string> => {
  const raw = reply.headers["set-cookie"]
  return Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]
}

export const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"

/** `bin/vdb auth login` as a user runs it: stdout arrives while it waits. */
export const startLogin = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(VDB, ["auth", "login", ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d) => (stdout += d))
  child.stderr.on("data", (d) => (stderr += d))
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)))
  const userCode = async (): Promise<string> => {
    const deadline = Date.now() + 30_000
    for (;;) {
      // The whole prompt: the code's line and the next one, with the URL to open (two writes, which may
      // arrive apart; a test that read the URL right after the code alone saw it missing).
      const match = /one-time code: ([A-Z]{3}-[A-Z]{3})\n.*in your browser/.exec(stdout)
      if (match !== null) return match[1]!
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`no code from auth login: ${stdout} ${stderr}`)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  return { child, exited, userCode, output: () => ({ stdout, stderr }) }
}

/**
 * A body declared `declared` bytes long (`Content-Length`) of which one byte is sent and no more.
 * The reply is what the server answers without reading the body it was promised.
 */
export const declaredBody = (port: number, path: string, contentType: string, declared: number): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const headers = { "content-type": contentType, "content-length": String(declared) }
    const req = request({ host: "127.0.0.1", port, method: "POST", path, headers }, (res) =>
      readReply(res, (reply) => {
        req.destroy()
        resolve(reply)
      }))
    req.on("error", (error) => (req.destroyed ? undefined : reject(error)))
    req.write("x")
  })

/** The hidden CSRF field of a page's form. */
export const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!

/** A cookie jar as a `Cookie` header. */
export const cookieHeader = (jar: Record<string, string>) => Object.entries(jar).map(([k, v]) => `${k}=${v}`).join("; ")
