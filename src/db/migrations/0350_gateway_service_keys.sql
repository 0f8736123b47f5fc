-- One gateway service API key per organization. Only the verifier (hex
-- SHA-256 of the key) is stored; the key itself is shown once at issue time.
-- No foreign key to organizations: the gateway reads organization state
-- through the Organizations service, and each domain owns its own tables.
CREATE TABLE gateway_service_keys (
  org_uuid uuid PRIMARY KEY,
  verifier text NOT NULL CHECK (verifier ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL DEFAULT now(),
  rotated_at timestamptz NOT NULL DEFAULT now()
);
