-- Guardrail rules: each organization's RE2 rules over inference request text.
-- The pattern is stored as written; it is compiled (and a non-compiling one
-- refused) by the application, so a row written directly can still hold a
-- pattern that does not compile: evaluation skips it.
CREATE TABLE guardrail_rules (
  uuid uuid PRIMARY KEY,
  org_uuid uuid NOT NULL,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  rule_type text NOT NULL CHECK (rule_type IN ('blocked_pattern', 'pii_redact', 'delimiter_integrity')),
  action text NOT NULL CHECK (action IN ('block', 'redact', 'flag')),
  priority integer NOT NULL DEFAULT 100,
  enabled boolean NOT NULL DEFAULT true,
  pattern text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_uuid, name)
);

CREATE INDEX guardrail_rules_org ON guardrail_rules (org_uuid, priority);

-- One row per organization, bumped by a trigger on every change to its rules
-- (direct writes included): gateway processes key their compiled rule sets by
-- it, so a process recompiles only when the version it reads differs from the
-- one it holds.
CREATE TABLE guardrail_rule_versions (
  org_uuid uuid PRIMARY KEY,
  version bigint NOT NULL
);

CREATE FUNCTION guardrail_rules_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO guardrail_rule_versions AS v (org_uuid, version) VALUES (OLD.org_uuid, 1)
      ON CONFLICT (org_uuid) DO UPDATE SET version = v.version + 1;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO guardrail_rule_versions AS v (org_uuid, version) VALUES (NEW.org_uuid, 1)
      ON CONFLICT (org_uuid) DO UPDATE SET version = v.version + 1;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER guardrail_rules_changed AFTER INSERT OR UPDATE OR DELETE ON guardrail_rules
  FOR EACH ROW EXECUTE FUNCTION guardrail_rules_changed();
