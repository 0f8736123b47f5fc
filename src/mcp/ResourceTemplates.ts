/** The resource templates McpResources.ts registers, as data for docs/mcp.md. */
export const RESOURCE_TEMPLATES = [
  {
    uriTemplate: "vdb://vuln/{identifier}",
    description: "Every source's view of a vulnerability: sources, aliases, titles (JSON)"
  },
  {
    uriTemplate: "vdb://exploits/{identifier}",
    description: "The first page of public exploits for a vulnerability, with counts per source (JSON)"
  }
] as const
