-- How many requests the row's last statement admitted. One statement now decides a whole group of
-- one organization's concurrent requests in a process (src/ratelimit/RateLimiter.ts), and each
-- request's answer follows from this count and the new totals. `last_admitted` stays written
-- (this count > 0) for processes running the code before.
ALTER TABLE rate_counters ADD COLUMN last_admitted_count integer NOT NULL DEFAULT 0;
