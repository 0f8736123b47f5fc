import { Effect } from "effect"
import { request } from "node:http"

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  /** The bytes as sent (no content decoding, unlike `fetch`). */
  readonly body: Buffer
}

/** One GET over `node:http`, so a compressed body arrives compressed. */
export const get = (url: string, headers: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<RawResponse>((resolve, reject) => {
      const req = request(url, { method: "GET", headers, agent: false }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
        res.on("error", reject)
      })
      req.on("error", reject)
      req.end()
    })
  )

export const json = (response: RawResponse): any => JSON.parse(response.body.toString("utf8"))
