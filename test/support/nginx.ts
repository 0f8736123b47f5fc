import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./processes.ts"

export const NGINX = "/usr/sbin/nginx"

export interface RunningNginx {
  /** The proxy's listening port for each upstream name. */
  readonly ports: Record<string, number>
  stop(): Promise<void>
}

/**
 * A real nginx in the foreground (`daemon off`), its prefix, config, logs and temp files in a temp
 * dir, one loopback server per upstream on a free port, no TLS. An upstream given several ports is
 * balanced over them round robin, with nginx's default failover (a server refusing connections is
 * skipped for 10 s). It connects to vdb from `bindFrom`
 * (a loopback address of its own), so the servers behind it can tell the proxy from its clients, and
 * sets X-Forwarded-For and X-Forwarded-Proto as deploy/nginx/vdb.conf does.
 */
export const startNginx = async (
  upstreams: Record<string, number | ReadonlyArray<number>>,
  bindFrom: string
): Promise<RunningNginx> => {
  const prefix = mkdtempSync(join(tmpdir(), "vdb-nginx-"))
  for (const dir of ["logs", "client_body", "proxy"]) mkdirSync(join(prefix, dir))
  const ports: Record<string, number> = {}
  for (const name of Object.keys(upstreams)) ports[name] = await freePort()
  const servers = Object.entries(upstreams).map(([name, port]) => `
    upstream vdb_${name} { ${[port].flat().map((p) => `server 127.0.0.1:${p};`).join(" ")} }
    server {
      listen 127.0.0.1:${ports[name]};
      location / {
        proxy_pass http://vdb_${name};
        proxy_bind ${bindFrom};
        proxy_http_version 1.1;
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_buffering off;
      }
    }`).join("\n")
  writeFileSync(
    join(prefix, "nginx.conf"),
    `
${process.getuid?.() === 0 ? "user root;" : ""}
worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/proxy;
  uwsgi_temp_path ${prefix}/proxy;
  scgi_temp_path ${prefix}/proxy;
  ${servers}
}
`
  )
  const child: ChildProcess = spawn(NGINX, ["-p", prefix, "-c", join(prefix, "nginx.conf"), "-g", "daemon off;"], {
    stdio: ["ignore", "ignore", "pipe"]
  })
  let stderr = ""
  child.stderr?.on("data", (d) => (stderr += d))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const deadline = Date.now() + 10_000
  for (const port of Object.values(ports)) {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`)
      if (Date.now() > deadline) throw new Error(`nginx not ready: ${stderr}`)
      // 502 until vdb answers, which it already does: any answer means nginx listens.
      if (await fetch(`http://127.0.0.1:${port}/readyz`).then(() => true, () => false)) break
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return {
    ports,
    stop: () => {
      if (child.exitCode === null) child.kill("SIGQUIT")
      return exited
    }
  }
}
