-- Request log for usage analytics and audit (written in batches off the response path).
CREATE TABLE usage_log (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  org_uuid uuid,
  method text NOT NULL,
  route text NOT NULL,
  identifier text,
  status integer NOT NULL,
  latency_ms real NOT NULL,
  client_address text,
  user_agent text
);
CREATE INDEX usage_log_at ON usage_log (at);
CREATE INDEX usage_log_org_at ON usage_log (org_uuid, at);

-- Entries refused because the in-process queue was full: counted, never silent.
CREATE TABLE usage_dropped (
  id integer PRIMARY KEY CHECK (id = 1),
  dropped bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);
