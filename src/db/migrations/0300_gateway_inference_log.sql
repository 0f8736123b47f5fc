-- Per-organization switch for the inference log (off unless enabled).
CREATE TABLE gateway_inference_settings (
  org_uuid uuid PRIMARY KEY REFERENCES organizations (uuid) ON DELETE CASCADE,
  enabled boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per relayed inference: metadata only, never prompt or completion text.
-- count_tokens is never written here.
CREATE TABLE gateway_inference_log (
  request_id uuid PRIMARY KEY,
  org_uuid uuid NOT NULL,
  provider text NOT NULL,
  surface text NOT NULL,
  model text NOT NULL,
  status integer NOT NULL,
  latency_ms double precision NOT NULL,
  request_bytes bigint NOT NULL,
  response_bytes bigint NOT NULL,
  decision text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX gateway_inference_log_org_created ON gateway_inference_log (org_uuid, created_at DESC);
