import { request as httpRequest, type IncomingHttpHeaders } from "node:http"

export interface Reply {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  readonly json: () => any
}

/** A raw HTTP/1.1 request with exactly the given headers and bytes. */
export const send = (
  url: string,
  options: {
    readonly method?: string
    readonly headers?: Record<string, string | Array<string>>
    readonly body?: string | Buffer
  } = {}
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? "POST", headers: options.headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const body = Buffer.concat(chunks)
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body.toString("utf8")) })
      })
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(options.body)
  })
