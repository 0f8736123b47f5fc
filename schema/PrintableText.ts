/**
 * What no name or value a person types may hold: control characters (a newline breaks listings and
 * every log line; PostgreSQL refuses NUL outright), line and paragraph separators, and bidirectional
 * overrides (which make a text display as something else). Organization names, guardrail rule names
 * and policy values refuse it alike.
 */
export const UNPRINTABLE = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u
