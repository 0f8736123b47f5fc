import { Effect } from "effect"

/** What ends the input: Enter (a password), or Ctrl-D (a pasted key or sign-in, which may span lines). */
export type HiddenInputEnd = "enter" | "ctrl-d"

export type HiddenInputOutcome =
  | { readonly _tag: "Read"; readonly text: string }
  | { readonly _tag: "Cancelled" }
  | { readonly _tag: "TooLong" }

const CTRL_C = 0x03
const CTRL_D = 0x04
const BACKSPACE = 0x08
const DELETE = 0x7f
const CR = 0x0d
const LF = 0x0a

/**
 * A secret typed or pasted at a terminal, read with the terminal's echo off (raw mode), so it is
 * never shown on the screen or left in the scrollback: with echo on, a typed password or a pasted
 * provider key stayed on screen. Backspace erases, Ctrl-C cancels; Enter (CR or LF) is a line break
 * unless `end` is "enter". `prompt` (on stderr) is shown once the echo is off, so nothing typed
 * after it can be echoed. The terminal's mode is restored however the input ends. Only for a
 * terminal (`process.stdin.isTTY`); piped input is read as it is.
 */
export const readHidden = (prompt: string, end: HiddenInputEnd, maxBytes: number): Effect.Effect<HiddenInputOutcome> =>
  Effect.callback<HiddenInputOutcome>((resume) => {
    const stdin = process.stdin
    const bytes: Array<number> = []
    let afterCr = false
    const restore = () => {
      stdin.off("data", onData)
      stdin.setRawMode(false)
      stdin.pause()
    }
    const finish = (outcome: HiddenInputOutcome) => {
      restore()
      // The Enter or Ctrl-D that ended the input was not echoed either.
      process.stderr.write("\n")
      resume(Effect.succeed(outcome))
    }
    const onData = (chunk: Buffer) => {
      for (const byte of chunk) {
        // A pasted CRLF is one line break.
        if (byte === LF && afterCr) {
          afterCr = false
          continue
        }
        afterCr = byte === CR
        if (byte === CTRL_C) return finish({ _tag: "Cancelled" })
        if (byte === CTRL_D || ((byte === CR || byte === LF) && end === "enter")) {
          return finish({ _tag: "Read", text: Buffer.from(bytes).toString("utf8") })
        }
        if (byte === BACKSPACE || byte === DELETE) {
          // One whole UTF-8 character: continuation bytes, then its lead byte.
          while (bytes.length > 0 && (bytes[bytes.length - 1]! & 0xc0) === 0x80) bytes.pop()
          bytes.pop()
          continue
        }
        bytes.push(byte === CR ? LF : byte)
        if (bytes.length > maxBytes) return finish({ _tag: "TooLong" })
      }
    }
    stdin.setRawMode(true)
    stdin.on("data", onData)
    stdin.resume()
    process.stderr.write(`${prompt}\n`)
    return Effect.sync(restore)
  })
