import { Config, Duration } from "effect"

/**
 * Grant lifetime (`expires_in`, default 15 minutes) and the minimum polling
 * interval (`interval`, default 5 s). Configurable so tests can run the whole
 * flow in seconds; production keeps the defaults.
 */
export const DeviceSettings = Config.all({
  lifetime: Config.Duration("VDB_DEVICE_CODE_LIFETIME").pipe(Config.withDefault(Duration.minutes(15))),
  interval: Config.Duration("VDB_DEVICE_POLL_INTERVAL").pipe(Config.withDefault(Duration.seconds(5)))
})

export interface GrantTiming {
  readonly lifetimeSeconds: number
  readonly intervalSeconds: number
}

export const timingOf = (
  settings: { readonly lifetime: Duration.Duration; readonly interval: Duration.Duration }
): GrantTiming => ({
  lifetimeSeconds: Math.max(1, Math.round(Duration.toSeconds(settings.lifetime))),
  intervalSeconds: Math.max(1, Math.round(Duration.toSeconds(settings.interval)))
})
