import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { concat, sampleFrames, splitAt } from "./frames.ts"

export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

/** How the sign-in service answers the next refresh (`n` counts refresh calls from 1). */
export type AuthAnswer = (n: number, body: any) => { readonly status: number; readonly body: unknown }

/**
 * Kiro on loopback: the sign-in services (`/refreshToken` social,
 * `/token` SSO OIDC) and the API (`/generateAssistantResponse`, whose event
 * stream is written in pieces cut inside frames and preludes,
 * `/ListAvailableModels`). Records everything it receives.
 */
export interface FakeKiro {
  readonly url: string
  readonly refreshes: Array<Received>
  readonly calls: Array<Received>
  /** The bytes of the event stream `/generateAssistantResponse` answers with. */
  readonly stream: Buffer
  auth: AuthAnswer
  /** Holds each refresh answer back until this promise settles (concurrency tests). */
  gate: Promise<void> | undefined
  /** Holds refresh answers back (sets `gate`) until the returned function is called. */
  hold(): () => void
  listing: unknown
  /** Status of `/generateAssistantResponse` and `/ListAvailableModels` (default 200). */
  apiStatus: number
  /** A long stream to answer with instead, written piece by piece as fast as the reader takes them (measurements). */
  bulk: ReadonlyArray<Buffer> | undefined
  reset(): void
  close(): Promise<void>
}

export const defaultAuth: AuthAnswer = (n) => ({
  status: 200,
  body: { accessToken: `access-token-${n}`, expiresIn: 3600 }
})

export const defaultListing = {
  models: [
    { modelId: "claude-sonnet-4.5", modelName: "Claude Sonnet 4.5", rateMultiplier: 1.3 },
    { modelId: "claude-haiku-4.5", modelName: "Claude Haiku 4.5", rateMultiplier: 0.4 },
    { modelId: "claude-opus-4.5", modelName: "Claude Opus 4.5", rateMultiplier: 2.2 }
  ],
  defaultModel: { modelId: "claude-opus-4.5", modelName: "Claude Opus 4.5" },
  nextToken: null
}

const writeBulk = (res: ServerResponse, pieces: ReadonlyArray<Buffer>) => {
  let at = 0
  const next = () => {
    while (at < pieces.length) {
      if (!res.write(pieces[at++]!)) return void res.once("drain", next)
    }
    res.end()
  }
  next()
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 2))

export const startFakeKiro = async (): Promise<FakeKiro> => {
  const stream = concat(sampleFrames())
  const first = sampleFrames()[0]!.length
  // Cuts: inside the first prelude, at a frame boundary plus one, inside the second prelude, mid-payload.
  const pieces = splitAt(stream, [2, 7, first + 1, first + 6, first + 30, stream.length - 5])
  const state = {
    refreshes: [] as Array<Received>,
    calls: [] as Array<Received>,
    auth: defaultAuth,
    gate: undefined as Promise<void> | undefined,
    listing: defaultListing as unknown,
    apiStatus: 200,
    bulk: undefined as ReadonlyArray<Buffer> | undefined
  }
  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body)
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
    res.end(text)
  }
  const server = createServer({ noDelay: true }, (req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", async () => {
      const received = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks)
      }
      const path = received.url.split("?")[0]!
      if (path.endsWith("/refreshToken") || path.endsWith("/token")) {
        state.refreshes.push(received)
        const n = state.refreshes.length
        if (state.gate !== undefined) await state.gate
        const answer = state.auth(n, JSON.parse(received.body.toString("utf8")))
        return json(res, answer.status, answer.body)
      }
      state.calls.push(received)
      if (path.endsWith("/ListAvailableModels")) {
        return json(res, state.apiStatus, state.apiStatus === 200 ? state.listing : { message: "denied" })
      }
      if (path.endsWith("/generateAssistantResponse")) {
        if (state.apiStatus !== 200) {
          return json(res, state.apiStatus, { message: "The bearer token included in the request is invalid." })
        }
        res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "req-1" })
        if (state.bulk !== undefined) return writeBulk(res, state.bulk)
        for (const piece of pieces) {
          res.write(piece)
          await pause()
        }
        return res.end()
      }
      json(res, 404, { message: "no such path" })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const fake: FakeKiro = {
    url: `http://127.0.0.1:${port}`,
    stream,
    get refreshes() {
      return state.refreshes
    },
    get calls() {
      return state.calls
    },
    get auth() {
      return state.auth
    },
    set auth(answer) {
      state.auth = answer
    },
    get gate() {
      return state.gate
    },
    set gate(gate) {
      state.gate = gate
    },
    hold: () => {
      let open!: () => void
      state.gate = new Promise((resolve) => {
        open = resolve
      })
      return open
    },
    get listing() {
      return state.listing
    },
    set listing(listing) {
      state.listing = listing
    },
    get apiStatus() {
      return state.apiStatus
    },
    set apiStatus(status) {
      state.apiStatus = status
    },
    get bulk() {
      return state.bulk
    },
    set bulk(bulk) {
      state.bulk = bulk
    },
    reset: () => {
      state.refreshes.length = 0
      state.calls.length = 0
      state.auth = defaultAuth
      state.gate = undefined
      state.listing = defaultListing
      state.apiStatus = 200
      state.bulk = undefined
    },
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
  return fake
}
