import { IncomingMessage } from "node:http"

/**
 * A request standing in for `original`, whose body an interceptor has read (`body`, all of it):
 * the same connection, method, target, version and headers, and the same body to read again.
 * What an interceptor forwards to the router (`InterceptingServer`'s `Forward`) when it does not
 * answer after all: the platform reads the body from the request it is given, and the original's
 * is spent. Complete, as the original is, so nothing is drained or torn down for it.
 */
export const replayedRequest = (original: IncomingMessage, body: Buffer): IncomingMessage => {
  const request = new IncomingMessage(original.socket)
  request.httpVersionMajor = original.httpVersionMajor
  request.httpVersionMinor = original.httpVersionMinor
  request.httpVersion = original.httpVersion
  request.method = original.method
  request.url = original.url ?? ""
  request.headers = original.headers
  request.rawHeaders = original.rawHeaders
  request.complete = true
  if (body.byteLength > 0) request.push(body)
  request.push(null)
  return request
}
