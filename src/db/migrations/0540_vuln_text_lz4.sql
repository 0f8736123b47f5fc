-- The store's large texts (each upstream item as fetched, each record as served, exploit bodies)
-- compressed with lz4 where the server has it. They were stored uncompressed (EXTERNAL) to keep pglz
-- off the ingest's path; lz4 costs far less than the bytes it saves. Measured on PostgreSQL 15 with
-- 30,000 CVE records of 3.4 KB (docs/ingest.md, "Storage"): inserts 308 ms against 520 ms uncompressed,
-- WAL 34 MB against 113 MB, table 33 MB against 113 MB. Only values written from now on are compressed.
-- A server built without lz4 (PGlite among them) refuses the method: the block then changes nothing
-- and the texts stay uncompressed.
DO $$
BEGIN
  ALTER TABLE vuln_raw ALTER COLUMN content SET COMPRESSION lz4, ALTER COLUMN content SET STORAGE EXTENDED;
  ALTER TABLE vuln_records ALTER COLUMN record SET COMPRESSION lz4, ALTER COLUMN record SET STORAGE EXTENDED;
  ALTER TABLE vuln_exploit_content ALTER COLUMN content SET COMPRESSION lz4, ALTER COLUMN content SET STORAGE EXTENDED;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END
$$;
