import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { ApprovalThrottle } from "../../src/device/ApprovalThrottle.ts"
import { AuthorizeLimiter } from "../../src/device/AuthorizeLimiter.ts"
import { DeviceGrants } from "../../src/device/DeviceGrants.ts"
import { Members } from "../../src/members/Members.ts"
import { Sessions } from "../../src/members/Sessions.ts"
import { SignInThrottle } from "../../src/members/SignInThrottle.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { SiteRoutes } from "../../src/site/SiteRoutes.ts"

/** What the site's routes need, on the memory layers; a test may swap the sessions. */
export const siteDomains = (sessions: Layer.Layer<Sessions, never, Members> = Sessions.layerMemory) =>
  Layer.mergeAll(
    sessions,
    DeviceGrants.layerMemory,
    AuthorizeLimiter.layerMemory,
    ApprovalThrottle.layerMemory,
    SignInThrottle.layerMemory
  ).pipe(
    Layer.provideMerge(Members.layerMemory),
    Layer.provideMerge(Organizations.layerMemory),
    Layer.provideMerge(Invalidation.layerMemory)
  )

/** The site in process behind the test HTTP server, at `origin` (`VDB_SITE_URL`), over `domains`. */
export const siteApp = (origin: string, domains: ReturnType<typeof siteDomains> = siteDomains()) =>
  HttpRouter.serve(SiteRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provideMerge(domains),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ VDB_SITE_URL: `${origin}/` })))
  )
