// The doors' side of workspace trust (@keel/settings owns the rule): `keel trust [dir]`, the one warning line, and the
// terminal's question before the TUI starts. Each says what the folder's files want in @keel/settings' words.
import { createInterface } from 'node:readline'
import { resolve } from 'node:path'
import type { Context } from 'cordis'
import { notify } from '@keel/session/notice'
import { trustedWords, trustOfferWords } from '@keel/door/words'
import { escapeLine } from '@keel/session/escape'
import { type HeldSetting, heldLine, trustFolder, trustState } from '@keel/settings'
import type { ResolvedSettings } from './settings.ts'

function keys(held: HeldSetting[]): string[] {
  return [...new Set(held.map((entry) => entry.key))]
}

/**
 * After the boot, the held-back line as a `keel/notice`, so every door shows it its own way (print and serve on
 * stderr, the TUI as a note, the web page as a banner, ACP as a notice update).
 */
export function heldNotice(ctx: Context, settings: ResolvedSettings | undefined): void {
  const line = settings && heldLine(settings.held, settings.trust.folder)
  if (line) notify(ctx, 'trust', line)
}

/** `keel trust [dir]`: records trust for the folder's project files as they are now. */
export function trustCommand(dir: string): string {
  const before = trustState(resolve(dir))
  const state = trustFolder(resolve(dir))
  if (!state.files.length)
    return `keel: trusted ${escapeLine(state.folder)} (it has no project settings, .mcp.json or command files yet; adding them asks again)`
  const was = before.trusted ? ' (already trusted)' : ''
  return `keel: trusted ${escapeLine(state.folder)}${was}: ${state.files.map(escapeLine).join(', ')} now apply in full; a change to them asks again`
}

/** The one line that lists what an untrusted folder's files asked for, on stderr (a command with no door). */
export function heldWarning(settings: ResolvedSettings): string {
  return `keel: ${escapeLine(heldLine(settings.held, settings.trust.folder) ?? '')}`
}

/**
 * Asks on the terminal, once, before the TUI takes the screen: numbered choices confirmed with Enter, and a bare
 * Enter keeps the folder untrusted. Without a terminal it does not ask. Resolves true when the person trusted it;
 * otherwise the held-back line reaches the TUI as a notice (`heldNotice`).
 */
export async function askTrust(settings: ResolvedSettings, cwd: string): Promise<boolean> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return false
  const out = process.stderr
  const words = trustOfferWords(settings.trust.folder, keys(settings.held))
  out.write(
    [
      escapeLine(words.title),
      escapeLine(words.asks),
      ...settings.trust.files.map((file) => `  ${escapeLine(file)}`),
      words.means,
      `  1. ${words.trust}`,
      `  2. ${words.stay}`,
      '',
    ].join('\n'),
  )
  const rl = createInterface({ input: process.stdin, output: out, terminal: true })
  let closed = false
  rl.on('close', () => {
    closed = true
  })
  rl.on('SIGINT', () => {
    out.write('\n')
    process.exit(130)
  })
  try {
    for (;;) {
      const answer = await new Promise<string | undefined>((done) => {
        rl.once('close', () => done(undefined))
        rl.question('Type 1 or 2, then Enter [2]: ', done)
      })
      // Ctrl-C or Ctrl-D: nothing was chosen, so nothing is trusted.
      if (answer === undefined || closed) return false
      if (answer.trim() === '1') {
        trustFolder(cwd)
        out.write(`keel: ${escapeLine(trustedWords(settings.trust.folder, false))}\n`)
        return true
      }
      if (answer.trim() === '' || answer.trim() === '2') return false
    }
  } finally {
    rl.close()
  }
}
