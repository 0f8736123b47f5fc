import type { CveSummary, VulnRecords } from "../../schema/CveSummary.ts"
import type { ExploitResponse } from "../../schema/ExploitResponse.ts"
import type { TokenResponse } from "../../schema/TokenResponse.ts"

/*
 * The 200 examples of the OpenAPI document (and so of `/docs`): real answers of this
 * service for Log4Shell after `bin/vdb ingest --all test/fixtures/data`, so a reader sees
 * what the fields hold. Where a whole answer would drown the page, a part of it: `/vuln`
 * shows the smallest of its three records (CISA KEV's), `/exploits` three of its ten rows.
 * test/api/docs.test.ts decodes each against its endpoint's success schema.
 */

/** A token as `GET /auth/token` issues it (signed with a throwaway key: it opens nothing). */
export const tokenExample: TokenResponse = {
  token:
    "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJzZGciOiJ2bE1uZU9FMWpfaEZiWDN1NjlQQkt3IiwiaXNzIjoidXJuOnZlbmRvcjp2ZGIiLCJzdWIiOiJ1cm46dXVpZDowZjhjN2MxZS0zYjFhLTRjNTUtOWE1Ny0yZjhiNmQxZTRhOTAiLCJpYXQiOjE3OTYxNzU2MDAsImV4cCI6MTc5NjE3NjUwMH0.LW9y8j-l2B9qvsW8nMjxy2al-CARQgJhpSNjDIQLVsYlZIpFRVeSPzXu2BD9OK-2Y6gsdRn0m8Fz_dB_D_eVcw",
  iss: "urn:vendor:vdb",
  sub: "urn:uuid:0f8c7c1e-3b1a-4c55-9a57-2f8b6d1e4a90",
  exp: 1796176500
}

export const summaryExample: CveSummary = {
  _identifier: "CVE-2021-44228",
  _timestamp: 1796175657,
  cache_hit: false,
  matched: true,
  gcve: false,
  lastFetchedAt: 1796175656,
  lastEnrichedAt: 1796175656,
  sources: [{ name: "cisa-kev", processing: false }, { name: "ghsa", processing: false }, {
    name: "mitre",
    processing: false
  }],
  aliases: ["GHSA-jfh8-c2jp-5v3q"],
  references: 114,
  problemTypes: 10,
  metrics: 6,
  affected: 5,
  impacts: 0,
  descriptions: 3,
  scorecards: 0,
  links: [
    { type: "page", format: "http", url: "https://www.cve.org/CVERecord?id=CVE-2021-44228" },
    {
      type: "cisa-kev",
      format: "http",
      url: "https://www.cisa.gov/known-exploited-vulnerabilities-catalog?search_api_fulltext=CVE-2021-44228"
    },
    { type: "ghsa", format: "osv", url: "https://api.osv.dev/v1/vulns/GHSA-jfh8-c2jp-5v3q" },
    { type: "mitre", format: "cvelistV5", url: "https://cveawg.mitre.org/api/cve/CVE-2021-44228" }
  ]
}

export const recordsExample: typeof VulnRecords.Type = [
  {
    dataType: "CVE_RECORD",
    dataVersion: "5.1",
    cveMetadata: {
      cveId: "CVE-2021-44228",
      assignerOrgId: "49100cec-1805-4aa5-956a-0eef3efb3570",
      assignerShortName: "CISA-KEV",
      state: "PUBLISHED",
      datePublished: "2021-12-10T00:00:00Z"
    },
    containers: {
      cna: {
        providerMetadata: { orgId: "49100cec-1805-4aa5-956a-0eef3efb3570", shortName: "CISA-KEV" },
        title: "Apache Log4j2 Remote Code Execution Vulnerability",
        descriptions: [
          {
            lang: "en",
            value:
              "Apache Log4j2 contains a vulnerability where JNDI features do not protect against attacker-controlled JNDI-related endpoints, allowing for remote code execution."
          }
        ],
        affected: [{ vendor: "Apache", product: "Log4j2", defaultStatus: "affected" }],
        references: [{ url: "https://nvd.nist.gov/vuln/detail/CVE-2021-44228" }],
        problemTypes: [
          { descriptions: [{ type: "CWE", cweId: "CWE-20", lang: "en", description: "CWE-20" }] },
          { descriptions: [{ type: "CWE", cweId: "CWE-400", lang: "en", description: "CWE-400" }] },
          { descriptions: [{ type: "CWE", cweId: "CWE-502", lang: "en", description: "CWE-502" }] }
        ],
        solutions: [
          {
            lang: "en",
            value:
              "For all affected software assets for which updates exist, the only acceptable remediation actions are: 1) Apply updates; OR 2) remove affected assets from agency networks. Temporary mitigations using one of the measures provided at https://www.cisa.gov/uscert/ed-22-02-apache-log4j-recommended-mitigation-measures are only acceptable until updates are available."
          }
        ]
      },
      adp: [
        {
          providerMetadata: { orgId: "7723d2c7-77d8-4b8b-a049-7a1db6267928", shortName: "vdb" },
          title: "vdb enrichment from cisa-kev",
          metrics: [
            {
              other: {
                type: "kev",
                content: {
                  dateAdded: "2021-12-10",
                  reference:
                    "https://www.cisa.gov/known-exploited-vulnerabilities-catalog?search_api_fulltext=CVE-2021-44228",
                  knownRansomwareCampaignUse: "Known",
                  dueDate: "2021-12-24",
                  requiredAction:
                    "For all affected software assets for which updates exist, the only acceptable remediation actions are: 1) Apply updates; OR 2) remove affected assets from agency networks. Temporary mitigations using one of the measures provided at https://www.cisa.gov/uscert/ed-22-02-apache-log4j-recommended-mitigation-measures are only acceptable until updates are available."
                }
              }
            }
          ],
          x_generatorVersion: "vdb-ingest/1.1.0",
          x_generatedAt: "2021-12-10T00:00:00Z",
          x_enrichmentSource: "CISA Known Exploited Vulnerabilities catalog",
          x_dataSource: "cisa-kev",
          x_dataCollected: [
            "affected",
            "descriptions",
            "epss",
            "knownExploited",
            "problemTypes",
            "references",
            "solutions"
          ],
          x_aliases: [],
          x_dueDate: "2021-12-24",
          x_epss: { score: 0.99999, percentile: 1, date: "2026-09-29", modelVersion: "v2026.06.15" }
        }
      ]
    }
  }
]

export const exploitsExample: ExploitResponse = {
  identifier: "CVE-2021-44228",
  timestamp: 1796175657,
  count: 10,
  summary: {
    exploitDb: 3,
    metasploit: 5,
    nuclei: 1,
    vulnerabilityLab: 0,
    vulnCheckXDB: 0,
    vulnCheckReportedExploitation: 0,
    crowdSec: 0,
    github: 1,
    other: 0
  },
  exploits: [
    {
      uuid: "df526a4f-6fad-5780-885a-664babecd55d",
      cveId: "CVE-2021-44228",
      source: "exploit-db",
      url: "https://www.exploit-db.com/exploits/51183",
      type: "exploit",
      title: "AD Manager Plus 7122 - Remote Code Execution (RCE)",
      createdAt: 1680307200,
      exploitDb: {
        id: "51183",
        author: "Chan Nyein Wai",
        date: 1680307200,
        platform: "java",
        type: "remote",
        verified: false,
        rawUrl: "https://gitlab.com/exploit-database/exploitdb/-/raw/main/exploits/java/remote/51183.txt"
      }
    },
    {
      uuid: "358b950f-5c11-5d15-b531-539c3e66641f",
      cveId: "CVE-2021-44228",
      source: "metasploit",
      url:
        "https://github.com/rapid7/metasploit-framework/blob/master/modules/exploits/multi/http/vmware_vcenter_log4shell.rb",
      type: "exploit",
      title: "VMware vCenter Server Unauthenticated JNDI Injection RCE (via Log4Shell)",
      metasploit: {
        modulePath: "modules/exploits/multi/http/vmware_vcenter_log4shell.rb",
        moduleUrl:
          "https://github.com/rapid7/metasploit-framework/blob/master/modules/exploits/multi/http/vmware_vcenter_log4shell.rb",
        rawUrl:
          "https://raw.githubusercontent.com/rapid7/metasploit-framework/master/modules/exploits/multi/http/vmware_vcenter_log4shell.rb",
        name: "vmware_vcenter_log4shell.rb"
      }
    },
    {
      uuid: "daac2a55-4833-5b76-b719-8346373ebd78",
      cveId: "CVE-2021-44228",
      source: "nuclei",
      url: "https://github.com/projectdiscovery/nuclei-templates/blob/main/http/cves/2021/CVE-2021-44228.yaml",
      type: "exploit",
      title: "Apache Log4j2 Remote Code Injection",
      nuclei: {
        path: "http/cves/2021/CVE-2021-44228.yaml",
        templateUrl:
          "https://github.com/projectdiscovery/nuclei-templates/blob/main/http/cves/2021/CVE-2021-44228.yaml",
        rawUrl:
          "https://raw.githubusercontent.com/projectdiscovery/nuclei-templates/main/http/cves/2021/CVE-2021-44228.yaml",
        severity: "critical",
        author: "melbadry9,dhiyaneshDK,daffainfo,anon-artist,0xceba,Tea,j4vaovo",
        references: [
          "https://logging.apache.org/log4j/2.x/security.html",
          "https://nvd.nist.gov/vuln/detail/CVE-2021-44228",
          "https://github.com/advisories/GHSA-jfh8-c2jp-5v3q",
          "https://www.lunasec.io/docs/blog/log4j-zero-day/",
          "https://gist.github.com/bugbountynights/dde69038573db1c12705edb39f9a704a"
        ]
      }
    }
  ]
}
