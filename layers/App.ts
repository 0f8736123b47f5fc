import type { PgClient } from "@effect/sql-pg"
import { Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { DatabaseError } from "../src/db/Database.ts"
import type { Invalidation } from "../src/db/Invalidation.ts"
import { MigrationsLayer } from "../src/db/Migrations.ts"
import { ApprovalThrottle } from "../src/device/ApprovalThrottle.ts"
import { AuthorizeLimiter } from "../src/device/AuthorizeLimiter.ts"
import { DeviceGrants } from "../src/device/DeviceGrants.ts"
import { InferenceLog } from "../src/inference/InferenceLog.ts"
import { Members } from "../src/members/Members.ts"
import { Sessions } from "../src/members/Sessions.ts"
import { SignInThrottle } from "../src/members/SignInThrottle.ts"
import { TracingLayer } from "../src/observability/Tracing.ts"
import { Organizations } from "../src/orgs/Organizations.ts"
import { Policies } from "../src/policies/Policies.ts"
import { CustomProvidersLive } from "../src/providers/custom/CustomProvidersLive.ts"
import { MasterKeyCheck } from "../src/secrets/MasterKeyCheck.ts"
import { MasterKeyFromConfig } from "../src/secrets/MasterKeyLoader.ts"
import { SecretBox } from "../src/secrets/SecretBox.ts"
import { ServiceKeys } from "../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../src/vault/ProviderKeys.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"

/** Every domain service over SQL; each requires only `SqlClient`, `SecretBox` and the database's `Invalidation` bus. */
export const SqlDomains = CustomProvidersLive.pipe(Layer.provideMerge(
  Layer.mergeAll(
    ServiceKeys.layer,
    ProviderKeys.layer,
    VulnStore.layer,
    InferenceLog.layer,
    Policies.layer,
    DeviceGrants.layer,
    AuthorizeLimiter.layer,
    ApprovalThrottle.layer,
    SignInThrottle.layer,
    Sessions.layer
  ).pipe(
    Layer.provideMerge(Members.layer),
    Layer.provideMerge(Organizations.layer)
  )
))

/**
 * The whole application over one database. Built in order: master key (before
 * the embedded database directory is created, so a lost key is noticed), the
 * database, migrations, the master-key check, then the domain services.
 * Tracing (OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else nothing) comes
 * first and closes last, so the spans of the last requests are flushed.
 */
export const appOver = <E>(database: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | Invalidation, E>) =>
  SqlDomains.pipe(
    Layer.provideMerge(MasterKeyCheck),
    Layer.provideMerge(MigrationsLayer),
    Layer.provideMerge(SecretBox.layer),
    Layer.provideMerge(database),
    Layer.provideMerge(MasterKeyFromConfig),
    Layer.provideMerge(TracingLayer)
  )

export type DatabaseFailure = DatabaseError
