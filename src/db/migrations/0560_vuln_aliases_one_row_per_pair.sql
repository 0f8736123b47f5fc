-- One row per alias pair instead of one per direction. The alias graph is undirected: the walk
-- (`aliasWalk` in src/vulns/SqlVulnStore.ts) follows a row from `identifier` to `alias` through the
-- primary key and from `alias` to `identifier` through the index below. Storing each pair once
-- halves the heap rows and leaves three index entries per pair instead of four; alias rows were
-- the largest part of an ingest's second phase (docs/ingest.md, "Storage").
CREATE INDEX vuln_aliases_alias ON vuln_aliases (alias);

-- Rows written before this migration hold both directions of each pair for one origin. Either
-- direction alone now means the same, so keep the one whose identifier sorts first; a re-normalised
-- origin still deletes every row it produced (by origin), whichever direction was kept.
DELETE FROM vuln_aliases a
USING vuln_aliases b
WHERE a.identifier > a.alias
  AND b.identifier = a.alias AND b.alias = a.identifier
  AND b.origin_source = a.origin_source AND b.origin_identifier = a.origin_identifier;
