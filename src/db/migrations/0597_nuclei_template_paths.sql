-- A nuclei template read from outside a nuclei-templates checkout (a per-CVE copy such as
-- test/fixtures/data/sources/nuclei/<CVE>.yaml) used to be stored without its path and URL, and its
-- row, the fuller of the rows of its uuid, was the one served: `/exploits` showed nuclei entries
-- without a URL. The normaliser now derives the path (src/ingest/formats/nuclei.ts). Forgetting that
-- these items were normalised makes them pending: the start-up resume (src/ingest/NormaliseResume.ts)
-- normalises them again from their stored text and replaces their rows; a re-ingestion does the same.
DELETE FROM vuln_normalised WHERE source = 'nuclei' AND identifier LIKE 'template:%';
