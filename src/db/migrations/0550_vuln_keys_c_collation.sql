-- The store's key columns compare as bytes (COLLATE "C"), not under the database's locale.
-- Every write and look-up descends their B-trees, and under a libc locale (C.UTF-8 and en_US.UTF-8
-- alike on PostgreSQL 15) each comparison copies both strings and calls strcoll: `perf` on an
-- ingest of the generated 300 k set put B-tree text comparisons at about a fifth of the server's
-- CPU (docs/ingest.md, "Storage"). Identifiers, sources, hashes and UUIDs are ASCII names, not
-- words: byte order is the order they have, and equality is unchanged. Only the indexes on these
-- columns are rebuilt; the rows are not rewritten.
ALTER TABLE vuln_raw
  ALTER COLUMN source TYPE text COLLATE "C",
  ALTER COLUMN identifier TYPE text COLLATE "C";
ALTER TABLE vuln_normalised
  ALTER COLUMN source TYPE text COLLATE "C",
  ALTER COLUMN identifier TYPE text COLLATE "C";
ALTER TABLE vuln_records
  ALTER COLUMN source TYPE text COLLATE "C",
  ALTER COLUMN identifier TYPE text COLLATE "C",
  ALTER COLUMN origin_source TYPE text COLLATE "C",
  ALTER COLUMN origin_identifier TYPE text COLLATE "C";
ALTER TABLE vuln_aliases
  ALTER COLUMN identifier TYPE text COLLATE "C",
  ALTER COLUMN alias TYPE text COLLATE "C",
  ALTER COLUMN origin_source TYPE text COLLATE "C",
  ALTER COLUMN origin_identifier TYPE text COLLATE "C";
ALTER TABLE vuln_epss
  ALTER COLUMN cve TYPE text COLLATE "C",
  ALTER COLUMN origin_source TYPE text COLLATE "C",
  ALTER COLUMN origin_identifier TYPE text COLLATE "C";
ALTER TABLE vuln_exploits
  ALTER COLUMN uuid TYPE text COLLATE "C",
  ALTER COLUMN origin_source TYPE text COLLATE "C",
  ALTER COLUMN origin_identifier TYPE text COLLATE "C",
  ALTER COLUMN cve_id TYPE text COLLATE "C";
ALTER TABLE vuln_exploit_content
  ALTER COLUMN uuid TYPE text COLLATE "C",
  ALTER COLUMN origin_source TYPE text COLLATE "C",
  ALTER COLUMN origin_identifier TYPE text COLLATE "C";
ALTER TABLE vuln_failed
  ALTER COLUMN source TYPE text COLLATE "C",
  ALTER COLUMN identifier TYPE text COLLATE "C";
