-- Custom providers (spec 2, Resources; issue 12): an organization's own
-- endpoint, addressable only by that organization under its slug. The key is
-- in provider_keys like any provider's; this row holds no secret.
-- auth: 'bearer', 'x-api-key' or 'header:<name>'. default_headers: a JSON
-- object of key-free headers. The address is vetted again on every request.
CREATE TABLE custom_providers (
  org_uuid uuid NOT NULL,
  slug text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  base_url text NOT NULL CHECK (base_url LIKE 'https://%' AND length(base_url) <= 2048),
  surfaces text[] NOT NULL CHECK (cardinality(surfaces) > 0 AND surfaces <@ ARRAY['chat', 'responses', 'messages']),
  auth text NOT NULL,
  default_headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_uuid, slug)
);
