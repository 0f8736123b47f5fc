// The benchmarks' HTTP client: a minimal keep-alive HTTP/1.1 client over
// `node:net`, one connection per worker, that reads each response to its end
// and keeps only its status (no header parsing beyond framing, no body
// decoding). It costs far less CPU than `node:http` or `fetch`, so on a small
// machine the server, not the client, is what gets measured.
import { connect } from "node:net"

const HEADER_END = Buffer.from("\r\n\r\n")
const CHUNKED_END = Buffer.from("0\r\n\r\n")

export interface HttpConnection {
  /** Sends one request and resolves with the status of its complete response, or 0 when the connection failed. */
  readonly get: (request: Buffer) => Promise<number>
  readonly close: () => void
}

/** One keep-alive connection to 127.0.0.1:`port`. */
export const httpConnection = (port: number) =>
  new Promise<HttpConnection>((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1", noDelay: true })
    let pending: ((status: number) => void) | undefined
    // The response being read: its head until the header ends, then only counts (a body of megabytes arrives in
    // hundreds of chunks; appending each to the ones before copied it over and over, and the client, not the
    // server, was what a large querybatch answer measured).
    let head: Buffer = Buffer.alloc(0)
    let status = 0
    let remaining: number | undefined
    let chunked = false
    let tail: Buffer = Buffer.alloc(0)
    let closed = false
    const fail = () => {
      closed = true
      const done = pending
      pending = undefined
      done?.(0)
    }
    const finish = (rest: Buffer) => {
      head = Buffer.alloc(0)
      remaining = undefined
      chunked = false
      tail = Buffer.alloc(0)
      const done = pending
      pending = undefined
      done?.(status)
      if (rest.length > 0) onData(rest)
    }
    const onData = (chunk: Buffer): void => {
      let body = chunk
      if (remaining === undefined && !chunked) {
        head = head.length === 0 ? chunk : Buffer.concat([head, chunk])
        const headerEnd = head.indexOf(HEADER_END)
        if (headerEnd === -1) return
        const text = head.subarray(0, headerEnd).toString("latin1")
        status = Number(text.slice(9, 12))
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(text)
        body = head.subarray(headerEnd + 4)
        if (length !== null) remaining = Number(length[1])
        else if (/\r\ntransfer-encoding:\s*chunked/i.test(text)) chunked = true
        else remaining = 0
      }
      if (remaining !== undefined) {
        if (body.length < remaining) {
          remaining -= body.length
          return
        }
        return finish(body.subarray(remaining))
      }
      tail = Buffer.concat([tail, body]).subarray(-5)
      if (tail.equals(CHUNKED_END)) finish(Buffer.alloc(0))
    }
    socket.once("error", (error) => {
      reject(error)
      fail()
    })
    socket.once("close", fail)
    socket.on("data", onData)
    socket.once("connect", () =>
      resolve({
        get: (request: Buffer) =>
          closed ? Promise.resolve(0) : new Promise<number>((r) => {
            pending = r
            socket.write(request)
          }),
        close: () => socket.destroy()
      }))
  })

/** A GET's bytes, built once and sent as often as needed. */
export const requestBytes = (
  port: number | string,
  path: string,
  authorization: string,
  headers: Record<string, string>
) =>
  Buffer.from(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: ${authorization}\r\n` +
      `User-Agent: vdb-bench\r\nAccept: application/json\r\n` +
      Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") + "\r\n",
    "latin1"
  )

/** A POST of a JSON body, built once and sent as often as needed. */
export const postBytes = (
  port: number | string,
  path: string,
  authorization: string,
  body: string,
  headers: Record<string, string> = {}
) => {
  const content = Buffer.from(body, "utf8")
  return Buffer.concat([
    Buffer.from(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: ${authorization}\r\n` +
        `User-Agent: vdb-bench\r\nAccept: application/json\r\nContent-Type: application/json\r\n` +
        Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") +
        `Content-Length: ${content.length}\r\n\r\n`,
      "latin1"
    ),
    content
  ])
}
