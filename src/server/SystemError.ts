/** Node system errors (`listen EADDRINUSE`, `connect ECONNREFUSED`) in words a person reads. */

/** Node's system error code (`ECONNREFUSED`, ...) anywhere in a `cause` chain. */
export const systemCode = (u: unknown): string | undefined => {
  for (
    let e = u, depth = 0;
    typeof e === "object" && e !== null && depth < 8;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) return code
  }
  return undefined
}

const SYSTEM_CODES: Record<string, string> = {
  EADDRINUSE: "address already in use",
  EADDRNOTAVAIL: "address not available on this machine",
  EACCES: "permission denied",
  EPERM: "permission denied",
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection closed",
  ETIMEDOUT: "timed out",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ENOENT: "no such file or directory",
  ENOTDIR: "a part of the path is not a directory",
  EISDIR: "is a directory",
  EROFS: "read-only file system",
  ENOSPC: "no space left on device"
}

export const systemReason = (u: unknown, fallback: string): string => {
  const code = systemCode(u)
  return code === undefined ? fallback : SYSTEM_CODES[code] ?? code
}

const SYSCALLS: Record<string, string> = {
  mkdir: "create the directory",
  open: "open",
  read: "read",
  write: "write",
  unlink: "remove",
  rename: "rename",
  stat: "read",
  lstat: "read",
  scandir: "list the directory",
  chmod: "change the mode of"
}

/** `cannot create the directory /x: permission denied` for a Node file-system error, else undefined. */
export const fileSystemLine = (u: unknown): string | undefined => {
  const e = u as { code?: unknown; syscall?: unknown; path?: unknown }
  if (typeof e !== "object" || e === null || typeof e.syscall !== "string" || typeof e.path !== "string") {
    return undefined
  }
  const verb = SYSCALLS[e.syscall]
  return verb === undefined ? undefined : `cannot ${verb} ${e.path}: ${systemReason(u, "failed")}`
}
