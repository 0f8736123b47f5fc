import { Socket } from "node:net"

/** Fails fast, with the command that fixes it, when the local PostgreSQL is not running. */
export default async function setup() {
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = new Socket()
    socket.setTimeout(2000)
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => {
      socket.destroy()
      resolve(false)
    })
    socket.connect(5432, "127.0.0.1")
  })
  if (!reachable) {
    throw new Error(
      "PostgreSQL is not reachable on 127.0.0.1:5432. Start it with: " +
        "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start (make test does this)"
    )
  }
}
