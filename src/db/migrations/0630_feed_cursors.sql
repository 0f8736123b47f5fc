-- Live upstream feeds (src/feeds/, issue 34): one row per source, its position
-- in the publisher's feed and how its last runs went. `cursor` is the source's
-- own position (a catalogue's ETag and Last-Modified; later a watermark or the
-- last delta applied); it is written only once what it covers is stored, so a
-- run killed at any point starts again from the last stored position.
-- `last_url`, `last_etag` and `last_fetched_at` are the provenance of the data
-- stored last. `last_error` is a status line: it never holds a credential.
CREATE TABLE feed_cursors (
  source text PRIMARY KEY,
  cursor json NOT NULL DEFAULT '{}',
  last_url text,
  last_etag text,
  last_fetched_at timestamptz,
  last_success_at timestamptz,
  last_attempt_at timestamptz,
  last_error text,
  last_error_kind text,
  -- Failed runs since the last success: the backoff's exponent, and one warning per streak.
  failures integer NOT NULL DEFAULT 0,
  records_changed integer NOT NULL DEFAULT 0,
  records_failed integer NOT NULL DEFAULT 0,
  next_run_at timestamptz
);
