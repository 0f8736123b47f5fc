// The layering rules of docs/architecture.md, checked by `make lint` (and so by CI).
// Violations that existed when the rules came in are listed in
// .dependency-cruiser-known-violations.json: they pass until fixed, a new one fails.
// `make lint-baseline` drops the fixed ones from that list and never adds any.

// The surfaces: each serves one protocol and may use any domain, never another surface.
// src/admin is the admin RPC surface (the CLI's Unix socket), beside the four HTTP ones.
const SURFACE = "^src/(api|gateway|site|mcp|admin)/"
const CLI = "^src/cli/"
// Assembly wires everything together, so it may import anything and nothing below imports it.
const ASSEMBLY = "^(src/server|layers)/"
// A domain (or shared machinery) is every other folder of src/: new folders count as domains.
const NOT_A_DOMAIN = "^src/(api|gateway|site|mcp|admin|cli|server)/"

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "domain-not-to-surface",
      comment: "A domain serves every surface, so it imports none of them: what a surface and a domain "
        + "both need belongs in the domain or below it.",
      severity: "error",
      from: { path: "^src/", pathNot: NOT_A_DOMAIN },
      to: { path: SURFACE }
    },
    {
      name: "only-cli-to-cli",
      comment: "The CLI sits on top: no domain, surface, assembly or schema imports it.",
      severity: "error",
      from: { path: "^(src|schema|layers)/", pathNot: CLI },
      to: { path: CLI }
    },
    {
      name: "domain-not-to-assembly",
      comment: "src/server and layers/ import every surface; a domain that imports them is one import "
        + "away from a surface. Shared machinery goes below the domains.",
      severity: "error",
      from: { path: "^src/", pathNot: NOT_A_DOMAIN },
      to: { path: ASSEMBLY }
    },
    {
      name: "surface-not-to-surface",
      comment: "Surfaces are independent: what two of them share is a domain or shared machinery.",
      severity: "error",
      from: { path: SURFACE },
      to: { path: SURFACE, pathNot: "^src/$1/" }
    },
    {
      name: "schema-not-to-src",
      comment: "schema/ is the wire and domain types a client imports alone: it imports no src/ or layers/.",
      severity: "error",
      from: { path: "^schema/" },
      to: { path: "^(src|layers)/" }
    },
    {
      name: "no-circular",
      comment: "A circle of imports has no order to read or load it in: move what both sides share to a leaf module.",
      severity: "error",
      from: {},
      to: { circular: true }
    }
  ],
  options: {
    // Only the layered code is checked; tests and benchmarks may import anything.
    includeOnly: "^(src|schema|layers)/",
    doNotFollow: { path: "node_modules" },
    // `import type` couples modules as much as a value import does.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".json"]
    },
    skipAnalysisNotInRules: true
  }
}
