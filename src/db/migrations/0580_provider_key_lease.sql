-- A lease on a vault row whose value changes as it is used (a Kiro sign-in, whose refresh token
-- the provider rotates at each refresh). The process refreshing it holds the lease while it calls
-- the provider, without holding a database session or transaction, and writes the new value back
-- only if the row still holds the value it read, so a key deleted or replaced meanwhile stays so.
-- Other processes wait for the lease to end, or to expire (a holder that stopped). See
-- src/vault/CachedProviderKeys.ts (`exclusive`).
ALTER TABLE provider_keys ADD COLUMN lease_holder text, ADD COLUMN lease_until timestamptz;
