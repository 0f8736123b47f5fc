/**
 * Log lines joined into one write per event-loop turn. Under load a
 * synchronous write per request (stderr to a file or pipe is synchronous on
 * Linux) costs more than building the line; one write per turn costs the same
 * whatever the request rate. Lines keep the order they were written in.
 */
export interface LineWriter {
  /** Queues one line (no trailing newline); written at the end of this turn. */
  readonly write: (line: string) => void
  /** Writes what is queued now, synchronously (shutdown, exit, tests). */
  readonly flush: () => void
}

/**
 * A turn under extreme load can queue many lines: past this many, they are
 * written at once, so the buffer stays bounded whatever the rate.
 */
const MAX_PENDING_LINES = 4096

/** `output` receives whole lines, each ending in a newline. */
export const makeLineWriter = (output: (chunk: string) => void): LineWriter => {
  let pending: Array<string> = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (pending.length === 0) return
    const lines = pending
    pending = []
    // A destination that throws (closed stderr) must never fail a request: the lines are lost, not the service.
    try {
      output(lines.join("\n") + "\n")
    } catch {
      // nothing sensible to report to: the log destination is what failed
    }
  }
  return {
    write: (line) => {
      pending.push(line)
      if (pending.length >= MAX_PENDING_LINES) flush()
      else if (!scheduled) {
        scheduled = true
        setImmediate(flush)
      }
    },
    flush
  }
}

let stderrWriter: LineWriter | undefined

/**
 * The process's stderr (where every other log line goes, see src/cli/main.ts),
 * flushed on exit too: a line queued in the turn that calls `process.exit` is
 * still written (stderr writes are synchronous for files, pipes and terminals on Linux).
 */
export const stderrLineWriter = (): LineWriter => {
  if (stderrWriter === undefined) {
    const writer = makeLineWriter((chunk) => void process.stderr.write(chunk))
    process.once("exit", writer.flush)
    stderrWriter = writer
  }
  return stderrWriter
}
