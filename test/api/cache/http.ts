import { Effect } from "effect"
import { request } from "node:http"

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  /** The bytes as sent (no content decoding, unlike `fetch`). */
  readonly body: Buffer
}

/** One request over `node:http` with exactly these headers (plus the framing ones), so a compressed body arrives compressed. */
const send = (method: "GET" | "POST", url: string, headers: Record<string, string>, body?: string) =>
  Effect.promise(() =>
    new Promise<RawResponse>((resolve, reject) => {
      const req = request(url, { method, headers, agent: false }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
        res.on("error", reject)
      })
      req.on("error", reject)
      req.end(body)
    })
  )

/** One GET. */
export const get = (url: string, headers: Record<string, string>) => send("GET", url, headers)

/** One POST of `body`. */
export const post = (url: string, headers: Record<string, string>, body: string) => send("POST", url, headers, body)

export const json = (response: RawResponse): any => JSON.parse(response.body.toString("utf8"))
