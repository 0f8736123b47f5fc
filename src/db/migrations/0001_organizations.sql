CREATE TABLE organizations (
  uuid uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  secret_sealed text NOT NULL,
  is_active boolean NOT NULL DEFAULT true,
  per_minute integer NOT NULL DEFAULT 5 CHECK (per_minute >= 0),
  per_week integer NOT NULL DEFAULT 1000 CHECK (per_week >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- One sealed canary: proves at start-up that the configured master key is the
-- one this database's secrets were sealed with.
CREATE TABLE master_key_check (
  id integer PRIMARY KEY CHECK (id = 1),
  key_id text NOT NULL,
  canary text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
