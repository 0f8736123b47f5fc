import { HttpServerResponse } from "effect/http"
import type { GrantView } from "../device/DeviceGrant.ts"

/**
 * The site's server-rendered pages: plain HTML forms, one inline style sheet,
 * no scripts and no external assets. Every interpolated value goes through
 * `escape`. Nothing here may show an API key or an organization id.
 */
const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}
main{max-width:28rem;margin:4rem auto;padding:2rem;background:#fff;border:1px solid #d0d7de;border-radius:8px}
h1{font-size:1.4rem;margin-top:0}label{display:block;margin:1rem 0 .25rem;font-weight:600}
input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;border:1px solid #8c959f;border-radius:4px}
input[name=code]{font-family:ui-monospace,monospace;font-size:1.4rem;letter-spacing:.15em;text-transform:uppercase}
button{margin-top:1.25rem;padding:.55rem 1.2rem;font:inherit;border-radius:4px;border:1px solid #1f6feb;background:#1f6feb;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#cf222e;border-color:#cf222e;margin-left:.5rem}
button:focus-visible,input:focus-visible{outline:3px solid #0969da;outline-offset:2px}
dl{display:grid;grid-template-columns:auto 1fr;gap:.35rem 1rem}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
.error{color:#cf222e;font-weight:600}.note{color:#57606a;font-size:.9rem}code{font-size:1.1rem}`

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  // Not no-referrer: with it Chromium sends `Origin: null` on form posts, which the same-origin check refuses.
  "referrer-policy": "same-origin",
  "cache-control": "no-store"
}

const page = (title: string, body: string, status = 200) =>
  HttpServerResponse.html(
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escape(title)} · vdb</title><style>${STYLE}</style></head>
<body><main>
${body}
</main></body></html>`
  ).pipe(HttpServerResponse.setStatus(status), HttpServerResponse.setHeaders(SECURITY_HEADERS))

const errorLine = (error: string | undefined) =>
  error === undefined ? "" : `<p class="error" role="alert">${escape(error)}</p>`

const csrfField = (csrf: string) => `<input type="hidden" name="csrf" value="${escape(csrf)}">`

export const loginPage = (options: { csrf: string; next: string; email?: string; error?: string; status?: number }) =>
  page(
    "Sign in",
    `<h1>Sign in to vdb</h1>
${errorLine(options.error)}
<form method="post" action="/login">
${csrfField(options.csrf)}
<input type="hidden" name="next" value="${escape(options.next)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escape(options.email ?? "")}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
<p class="note">Members of an organization sign in here; an administrator adds one with <code>bin/vdb member create</code>.</p>`,
    options.status
  )

const signedInAs = (email: string, csrf: string) =>
  `<form method="post" action="/logout" class="note">${csrfField(csrf)}Signed in as ${escape(email)}.
<button type="submit" class="secondary" style="margin-top:0">Sign out</button></form>`

export const codePage = (options: { csrf: string; email: string; code: string; error?: string; status?: number }) =>
  page(
    "Enter your code",
    `<h1>Connect a device</h1>
${errorLine(options.error)}
<form method="post" action="/device">
${csrfField(options.csrf)}
<label for="code">Enter the code shown in your terminal</label>
<input id="code" name="code" autocomplete="off" autocapitalize="characters" spellcheck="false" required
 placeholder="XXX-XXX" maxlength="9" value="${escape(options.code)}">
<button type="submit">Continue</button>
</form>
${signedInAs(options.email, options.csrf)}`,
    options.status
  )

export const approvalPage = (options: { csrf: string; email: string; grant: GrantView; now: number }) => {
  const { grant } = options
  const minutes = Math.max(0, Math.round((options.now - grant.createdAt) / 60_000))
  const ago = minutes === 0 ? "less than a minute ago" : minutes === 1 ? "1 minute ago" : `${minutes} minutes ago`
  return page(
    "Approve sign-in",
    `<h1>Approve this sign-in?</h1>
<p>A command-line client is asking for access to your organization's vulnerability data.
Approve only if you started it yourself and the code below matches your terminal.</p>
<dl>
<dt>Code</dt><dd><code>${escape(grant.userCode)}</code></dd>
<dt>Client</dt><dd>${escape(grant.client.name)} ${escape(grant.client.version)}
<br><span class="note">reported by the client, not verified: any program can give any name</span></dd>
<dt>From address</dt><dd>${escape(grant.client.address)}</dd>
<dt>Requested</dt><dd><time datetime="${new Date(grant.createdAt).toISOString()}">${
      new Date(grant.createdAt).toISOString().replace("T", " ").slice(0, 19)
    } UTC</time> (${ago})</dd>
</dl>
<form method="post" action="/device/decision">
${csrfField(options.csrf)}
<input type="hidden" name="code" value="${escape(grant.userCode)}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>
${signedInAs(options.email, options.csrf)}`
  )
}

export const decidedPage = (approved: boolean) =>
  page(
    approved ? "Device approved" : "Request denied",
    approved
      ? `<h1>Device approved</h1><p>You can return to your terminal; it will finish signing in by itself.</p>`
      : `<h1>Request denied</h1><p>The terminal that asked will be told no. If you did not start this sign-in, nothing more is needed.</p>`
  )

/** The result address of a code this member did not decide (or no such code): nothing to show, nothing done. */
export const noDecisionPage = () =>
  page(
    "No decision",
    `<h1>Nothing to show</h1><p>You have not approved or denied a sign-in with this code.</p><p><a href="/device">Enter a code</a></p>`,
    404
  )

export const forbiddenPage = () =>
  page("Form expired", `<h1>This form has expired</h1><p>Go back, reload the page and try again.</p>`, 403)

/** A page for a request no route takes (404, 405, 414): what happened, and the way back to the start. */
export const unmatchedPage = (status: number, title: string, text: string, headers: Record<string, string> = {}) =>
  page(title, `<h1>${escape(title)}</h1><p>${escape(text)}</p><p><a href="/">Go to the start page</a></p>`, status)
    .pipe(
      HttpServerResponse.setHeaders(headers)
    )
