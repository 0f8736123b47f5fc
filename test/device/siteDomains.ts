import { Layer } from "effect"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { DeviceGrants } from "../../src/device/DeviceGrants.ts"
import { Members } from "../../src/members/Members.ts"
import { Sessions } from "../../src/members/Sessions.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"

/** What the site's routes need, on the memory layers; a test may swap the sessions. */
export const siteDomains = (sessions: Layer.Layer<Sessions, never, Members> = Sessions.layerMemory) =>
  Layer.mergeAll(sessions, DeviceGrants.layerMemory).pipe(
    Layer.provideMerge(Members.layerMemory),
    Layer.provideMerge(Organizations.layerMemory),
    Layer.provideMerge(Invalidation.layerMemory)
  )
