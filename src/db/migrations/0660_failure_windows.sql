-- Failed attempts in a fixed window per key (src/db/FailureWindows.ts): the site's sign-in throttle
-- (per account and per client address) and the approval throttle (wrong user codes per member),
-- one row per key, so every process behind a proxy counts the same failures. `failures` stops at
-- the key's limit: past it nothing more is learned, and the row does not grow.
CREATE TABLE failure_windows (
  key text PRIMARY KEY,
  window_start timestamptz NOT NULL,
  failures int NOT NULL
);
