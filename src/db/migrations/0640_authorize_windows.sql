-- The device authorize limiter's windows (src/device/AuthorizeLimiter.ts): one row per client
-- address, so every process behind a proxy counts the same 12 calls a minute. `calls` stops at
-- 13 (the limit plus one): a refused call is told apart from the 12th without growing the row.
CREATE TABLE authorize_windows (
  address text PRIMARY KEY,
  window_start timestamptz NOT NULL,
  calls int NOT NULL
);
