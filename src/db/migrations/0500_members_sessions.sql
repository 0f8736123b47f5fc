-- Members of an organization (device sign-in, spec 3). The password is kept
-- only as an scrypt hash in a self-describing text form
-- (scrypt$<log2 N>$<r>$<p>$<salt b64>$<hash b64>). No foreign key to
-- organizations: the members domain checks the organization through the
-- Organizations service, and each domain owns its own tables.
CREATE TABLE members (
  uuid uuid PRIMARY KEY,
  org_uuid uuid NOT NULL,
  email text NOT NULL,
  password_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX members_email ON members (lower(email));
CREATE INDEX members_org ON members (org_uuid);

-- Browser sessions: only the SHA-256 (hex) of the random cookie value is stored.
CREATE TABLE member_sessions (
  token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  member_uuid uuid NOT NULL REFERENCES members (uuid) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX member_sessions_member ON member_sessions (member_uuid);
