import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { API_KEY_PLACEHOLDER, SIGNED_PLACEHOLDER } from "./ApiSecurity.ts"

export const DOCS_PATH = "/docs"
export const DOCS_SCRIPT_PATH = "/docs/scalar.js"
const OPENAPI_PATH = "/v1/openapi.json"

/**
 * Scalar's browser bundle as effect ships it (the script `HttpApiScalar.layer` inlines). The
 * module is effect's, not exported, so it is found beside the public `HttpApiScalar`; the
 * docs test fetches the script, so a move in a new effect version fails there, not in a browser.
 */
const loadScalar = Effect.promise(async () => {
  const publicModule = createRequire(import.meta.url).resolve("effect/http-api/HttpApiScalar")
  const bundle: { readonly javascript: string } = await import(
    new URL("./internal/httpApiScalar.js", pathToFileURL(publicModule)).href
  )
  const bytes = new TextEncoder().encode(bundle.javascript)
  return { bytes, version: createHash("sha256").update(bytes).digest("hex").slice(0, 16) }
})

/**
 * What the page asks of Scalar: the document from this service, no fonts from Scalar's font
 * host (the page uses the system's), no developer toolbar (it offers to upload the document to
 * Scalar's servers), and the `Authorization` value to send filled in as its placeholder.
 */
const scalarConfig = {
  _integration: "html",
  url: OPENAPI_PATH,
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: "never",
  authentication: {
    preferredSecurityScheme: "apiKey",
    securitySchemes: { apiKey: { value: API_KEY_PLACEHOLDER }, sigv4: { value: SIGNED_PLACEHOLDER } }
  }
}

/** JSON inside `<script>`: no `<` (so no `</script>`), no line terminators JavaScript does not take. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value).replaceAll("<", "\\u003c").replaceAll("\u2028", "\\u2028").replaceAll("\u2029", "\\u2029")

/** The element's id is not `api-reference`: Scalar's bundle mounts a second reference on that one, with its defaults and fonts. */
const page = (version: string) =>
  `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>vdb vulnerability data API</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
  </head>
  <body>
    <div id="docs"></div>
    <script src="${DOCS_SCRIPT_PATH}?v=${version}"></script>
    <script>
      window.Scalar.createApiReference(document.getElementById("docs"), ${scriptJson(scalarConfig)})
    </script>
  </body>
</html>
`

/**
 * `/docs`: the API reference (Scalar) for `/v1/openapi.json`, with everything it loads served
 * here, so it works offline: the page, and Scalar's script under `/docs/scalar.js`. The page
 * names the script with its content hash, so the script is cached for good and a new version is
 * a new URL. Loaded on the first request: the 3 MB bundle kept about 12 MiB of strings in every
 * idle server (bench/memory.ts), and only a server whose docs are read pays for it.
 *
 * `GET /` is a 302 to `/docs` (a browser lands on the reference), with a JSON body naming the
 * reference and the document for a client that does not follow redirects.
 */
export const ApiDocs = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const scalar = yield* Effect.cached(loadScalar)
  yield* router.add(
    "GET",
    DOCS_PATH,
    Effect.map(
      scalar,
      ({ version }) =>
        HttpServerResponse.html(page(version)).pipe(HttpServerResponse.setHeader("cache-control", "no-cache"))
    )
  )
  yield* router.add(
    "GET",
    DOCS_SCRIPT_PATH,
    Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request) =>
        Effect.map(scalar, ({ bytes, version }) =>
          HttpServerResponse.uint8Array(bytes, {
            contentType: "text/javascript; charset=utf-8",
            headers: {
              // Only the URL the page names is final; any other asks again next time.
              "cache-control": new URL(request.url, "http://x").searchParams.get("v") === version
                ? "public, max-age=31536000, immutable"
                : "no-cache"
            }
          }))
    )
  )
  yield* router.add(
    "GET",
    "/",
    Effect.succeed(
      HttpServerResponse.jsonUnsafe({ docs: DOCS_PATH, openapi: OPENAPI_PATH }, {
        status: 302,
        headers: { location: DOCS_PATH }
      })
    )
  )
}))
