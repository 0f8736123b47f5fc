-- RFC 8628 device grants. Only the SHA-256 (hex) of device_code is stored;
-- member_uuid stays null until a member approves or denies. Times come from
-- the application's Clock (so tests control expiry), not from now().
CREATE TABLE device_grants (
  device_code_hash text PRIMARY KEY CHECK (device_code_hash ~ '^[0-9a-f]{64}$'),
  user_code text NOT NULL UNIQUE,
  client_name text NOT NULL,
  client_version text NOT NULL,
  client_address text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  interval_seconds integer NOT NULL,
  last_polled_at timestamptz,
  member_uuid uuid,
  claimed_at timestamptz,
  approved_at timestamptz,
  denied_at timestamptz,
  redeemed_at timestamptz
);
CREATE INDEX device_grants_expires ON device_grants (expires_at);
