-- Phase 1 of ingestion: every upstream item as fetched, keyed by the source it
-- came from (`vulnrichment`, `exploit-db`, ... are ingest sources, not only the
-- record sources of spec 1).
CREATE TABLE vuln_raw (
  source text NOT NULL,
  identifier text NOT NULL,
  content text NOT NULL,
  content_hash text NOT NULL,
  fetched_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, identifier)
);
CREATE INDEX vuln_raw_identifier ON vuln_raw (identifier);
-- Bulk ingestion is bound by the server's CPU: storing large bodies
-- uncompressed (out of line) trades disk for not running pglz on every item.
ALTER TABLE vuln_raw ALTER COLUMN content SET STORAGE EXTERNAL;

-- The content hash phase 2 last completed for, per raw item: it differs from
-- `vuln_raw.content_hash` while the item is processing. A narrow table of its
-- own, so completing phase 2 never rewrites the wide raw row.
CREATE TABLE vuln_normalised (
  source text NOT NULL,
  identifier text NOT NULL,
  content_hash text NOT NULL,
  PRIMARY KEY (source, identifier)
);

-- Phase 2: CVE 5.1 records. Several raw items may normalise to the same
-- (source, identifier), e.g. a `mitre` file and a `vulnrichment` file of one CVE;
-- each keeps its own row (keyed by origin) and readers pick the newest by `rank`,
-- so the result never depends on the order files were ingested in.
CREATE TABLE vuln_records (
  source text NOT NULL,
  identifier text NOT NULL,
  origin_source text NOT NULL,
  origin_identifier text NOT NULL,
  -- CVE 5.1 JSON, written once (JSON.stringify) and served as is: `text`, not
  -- `json`, so the server neither re-validates it on every insert nor has
  -- anything to convert on read. `epss_splice` says where the read-time EPSS
  -- merge goes in that text (src/vulns/RecordText.ts), NULL when unknown.
  record text NOT NULL,
  epss_splice integer[],
  counts json NOT NULL,
  gcve boolean NOT NULL DEFAULT false,
  known_exploited json,
  rank text NOT NULL DEFAULT '',
  enriched_at timestamptz NOT NULL DEFAULT now(),
  -- Origin first: the key also serves replacing an item's output and the
  -- processing check, so there is no separate origin index to maintain.
  PRIMARY KEY (origin_source, origin_identifier, source, identifier)
);
CREATE INDEX vuln_records_identifier ON vuln_records (identifier);
ALTER TABLE vuln_records ALTER COLUMN record SET STORAGE EXTERNAL;

-- The alias graph, stored in both directions (OSV aliases are symmetric) so a
-- walk from any identifier is one index range scan per hop.
CREATE TABLE vuln_aliases (
  identifier text NOT NULL,
  alias text NOT NULL,
  origin_source text NOT NULL,
  origin_identifier text NOT NULL,
  PRIMARY KEY (identifier, alias, origin_source, origin_identifier)
);
CREATE INDEX vuln_aliases_origin ON vuln_aliases (origin_source, origin_identifier);

CREATE TABLE vuln_epss (
  cve text PRIMARY KEY,
  score double precision NOT NULL,
  percentile double precision NOT NULL,
  score_date text NOT NULL,
  model_version text NOT NULL,
  origin_source text NOT NULL,
  origin_identifier text NOT NULL
);
CREATE INDEX vuln_epss_origin ON vuln_epss (origin_source, origin_identifier);

-- One row per exploit and producing item; the uuid is stable (source + native id),
-- readers collapse rows of one uuid. Raw bodies live in vuln_exploit_content so
-- listing and counting never read them.
CREATE TABLE vuln_exploits (
  uuid text NOT NULL,
  origin_source text NOT NULL,
  origin_identifier text NOT NULL,
  cve_id text NOT NULL,
  source text NOT NULL,
  summary_key text NOT NULL,
  type text NOT NULL,
  url text,
  title text,
  created_at bigint,
  details json NOT NULL,
  PRIMARY KEY (origin_source, origin_identifier, uuid)
);
CREATE INDEX vuln_exploits_cve ON vuln_exploits (cve_id, created_at DESC);

CREATE TABLE vuln_exploit_content (
  uuid text NOT NULL,
  origin_source text NOT NULL,
  origin_identifier text NOT NULL,
  content text NOT NULL,
  PRIMARY KEY (origin_source, origin_identifier, uuid)
);
ALTER TABLE vuln_exploit_content ALTER COLUMN content SET STORAGE EXTERNAL;

-- Items whose normalisation failed: they stay `processing` and are listed by
-- `bin/vdb ingest --failed` until a later run normalises them.
CREATE TABLE vuln_failed (
  source text NOT NULL,
  identifier text NOT NULL,
  content_hash text NOT NULL,
  position text NOT NULL,
  reason text NOT NULL,
  failed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, identifier)
);
