-- One row per organization holding both current windows, so a single
-- INSERT ... ON CONFLICT DO UPDATE (which locks the row) decides and counts a
-- request atomically across every API process sharing the database.
CREATE TABLE rate_counters (
  org_uuid uuid PRIMARY KEY,
  minute_start timestamptz NOT NULL,
  minute_count integer NOT NULL,
  week_start timestamptz NOT NULL,
  week_count integer NOT NULL,
  last_admitted boolean NOT NULL
);
