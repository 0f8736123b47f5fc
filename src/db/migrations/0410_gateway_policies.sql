-- Gateway policy entries (spec 2, Guardrail behavior 6-8): per organization,
-- allow / deny entries for providers, models (per provider), tools, MCP
-- servers, skills and clients, and strip entries for tools and MCP servers.
-- provider = '' means "every provider" (a model entry always names one; a
-- provider entry never does). The gateway compiles an organization's entries
-- into one snapshot; gateway_policy_versions.version grows on every change so
-- a process can tell whether its snapshot is current.
CREATE TABLE gateway_policies (
  uuid uuid PRIMARY KEY,
  org_uuid uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('provider', 'model', 'tool', 'mcp', 'skill', 'client')),
  effect text NOT NULL CHECK (effect IN ('allow', 'deny', 'strip')),
  provider text NOT NULL DEFAULT '',
  value text NOT NULL CHECK (value <> '' AND length(value) <= 512),
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (effect <> 'strip' OR kind IN ('tool', 'mcp')),
  CHECK (kind <> 'model' OR provider <> ''),
  CHECK (kind <> 'provider' OR provider = ''),
  UNIQUE (org_uuid, kind, effect, provider, value)
);

CREATE TABLE gateway_policy_versions (
  org_uuid uuid PRIMARY KEY,
  version bigint NOT NULL
);
