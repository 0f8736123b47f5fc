import { Context } from "effect"
import { type IncomingMessage, Server, type ServerResponse } from "node:http"

/**
 * Hands a request an interceptor took to the router after all, to answer on `response` (the
 * request's own): `request` is the original, or one standing in for it whose body is still to
 * read (`replayedRequest`), when the interceptor has read the original's.
 */
export type Forward = (request: IncomingMessage, response: ServerResponse) => void

/**
 * Answers a request itself and returns true, or returns false to leave it to the router. An
 * interceptor that returned true may still `forward` it (once, instead of answering).
 */
export type Interceptor = (request: IncomingMessage, response: ServerResponse, forward: Forward) => boolean

/**
 * Where a service's routes register the requests they answer below Effect's
 * HTTP server (`src/gateway/RelayListener.ts`). Unset (the default) when the
 * routes are not served by an `InterceptingServer`, e.g. by a test server:
 * then every request goes through the router, which answers it the same way.
 */
export class ServerInterceptors
  extends Context.Reference<Array<Interceptor> | undefined>("vdb/server/ServerInterceptors", {
    defaultValue: () => undefined
  })
{}

/**
 * A Node HTTP server whose `request` events first go to its interceptors.
 * Node's HTTP parser announces every request with `emit("request", …)`, so
 * an interceptor that answers one keeps it from the listener
 * `@effect/platform-node` registers; everything else (`checkContinue`,
 * upgrades, requests no interceptor takes) reaches it unchanged.
 */
export class InterceptingServer extends Server {
  readonly interceptors: Array<Interceptor> = []
  /**
   * Requests whose response has not closed yet, however they are answered: what stopping waits
   * for, which the stop line reports (src/server/StopLog.ts). Open connections would count idle
   * keep-alive ones too.
   */
  inFlight = 0
  private readonly settled = () => {
    this.inFlight--
  }
  /** Counted once, when the request arrived: a forwarded request goes straight to the router's listener. */
  private readonly forward: Forward = (request, response) => {
    ;(Server.prototype.emit as (event: string, ...args: Array<unknown>) => boolean).call(
      this,
      "request",
      request,
      response
    )
  }

  override emit(event: string | symbol, ...args: Array<any>): boolean {
    if (event === "request" || event === "checkContinue") {
      this.inFlight++
      ;(args[1] as ServerResponse).once("close", this.settled)
    }
    if (event === "request" && this.interceptors.length > 0) {
      for (const intercept of this.interceptors) {
        if (intercept(args[0] as IncomingMessage, args[1] as ServerResponse, this.forward)) return true
      }
    }
    return (super.emit as (event: string | symbol, ...args: Array<any>) => boolean).call(this, event, ...args)
  }
}
