-- Package queries (issue 36, docs/api.md "Package queries"). Both tables are output of phase 2,
-- keyed by origin like vuln_records, so re-normalising an item replaces its rows.
--
-- Every record in the OSV schema: an OSV or GHSA record as its upstream wrote it, any other
-- source's CVE record converted (src/vulns/CveToOsv.ts). `changed` orders `/v1/changes`: each
-- write of a row takes the next value, so a mirror resumes after the last one it saw.
CREATE SEQUENCE vuln_osv_changes;
CREATE TABLE vuln_osv (
  source text COLLATE "C" NOT NULL,
  identifier text COLLATE "C" NOT NULL,
  origin_source text COLLATE "C" NOT NULL,
  origin_identifier text COLLATE "C" NOT NULL,
  modified text NOT NULL,
  osv text NOT NULL,
  changed bigint NOT NULL DEFAULT nextval('vuln_osv_changes'),
  PRIMARY KEY (origin_source, origin_identifier, source, identifier)
);
CREATE INDEX vuln_osv_identifier ON vuln_osv (identifier);
CREATE INDEX vuln_osv_changed ON vuln_osv (changed);
ALTER TABLE vuln_osv ALTER COLUMN osv SET STORAGE EXTERNAL;

-- The package index: one row per `affected` entry naming a package, under its OSV base ecosystem
-- and normalised name (src/vulns/PackageNames.ts). `affected` holds the entry's ecosystem (release
-- included), ranges and enumerated versions as JSON, so a query evaluates versions from these
-- rows alone and reads the records only of what matched. `package_key` is what invalidates the
-- response caches (`pkg:<ecosystem>/<name>`).
CREATE TABLE vuln_packages (
  ecosystem text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  source text COLLATE "C" NOT NULL,
  identifier text COLLATE "C" NOT NULL,
  origin_source text COLLATE "C" NOT NULL,
  origin_identifier text COLLATE "C" NOT NULL,
  package_key text COLLATE "C" NOT NULL,
  affected text NOT NULL
);
CREATE INDEX vuln_packages_package ON vuln_packages (ecosystem, name);
CREATE INDEX vuln_packages_origin ON vuln_packages (origin_source, origin_identifier);

-- Records normalised before these tables existed have no rows in them: forgetting that their
-- items were normalised makes them pending, and the start-up resume (src/ingest/NormaliseResume.ts)
-- normalises them again from their stored text (as 0597 did for nuclei); a re-ingestion does the same.
DELETE FROM vuln_normalised
WHERE source IN ('mitre', 'vulnrichment', 'nist-nvd', 'vulncheck-nvd', 'cisa-kev', 'vulncheck-kev', 'ghsa', 'osv', 'euvd');
