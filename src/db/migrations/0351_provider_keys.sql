-- The provider-key vault: one key per provider per organization, sealed with
-- the master key (SecretBox, AES-256-GCM). The sealed payload also names the
-- organization and provider, so a row copied to another (org, provider) does
-- not open. key_id is the master key that sealed the row (for re-sealing after
-- a master-key rotation).
CREATE TABLE provider_keys (
  org_uuid uuid NOT NULL,
  provider text NOT NULL CHECK (provider ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  sealed text NOT NULL,
  key_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_uuid, provider)
);
