// A private tmux server for driving the real `keel` binary in a real terminal.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const HAS_TMUX = spawnSync('tmux', ['-V']).status === 0
const SKIP_REASON = 'tmux is not installed (apt-get install tmux); the end-to-end terminal tests need it'
// In CI a missing tmux is a failure, not a skip: the terminal UI would go untested.
if (!HAS_TMUX && process.env.CI === 'true') throw new Error(SKIP_REASON)

/** One private tmux server (its own socket and config), so nothing of a developer's tmux is touched. */
export class Tmux {
  readonly socket = `keel-e2e-${process.pid}`
  readonly dir = mkdtempSync(join(tmpdir(), 'keel-tmux-'))
  readonly conf = join(this.dir, 'tmux.conf')

  constructor(
    readonly columns = 100,
    readonly rows = 50,
  ) {
    // escape-time 0: tmux would otherwise hold a lone Esc for 500 ms to see if a sequence follows.
    writeFileSync(this.conf, 'set -s escape-time 0\nset -g history-limit 5000\n')
  }

  run(...args: string[]): string {
    const result = spawnSync('tmux', ['-u', '-L', this.socket, '-f', this.conf, ...args], { encoding: 'utf8' })
    if (result.status !== 0) throw new Error(`tmux ${args[0]} failed: ${result.stderr.trim()}`)
    return result.stdout
  }

  start(name: string, command: string): void {
    this.run('new-session', '-d', '-s', name, '-x', String(this.columns), '-y', String(this.rows), command)
  }

  /** The visible screen, or with `history` everything that scrolled off too. */
  screen(name: string, history = false): string {
    return this.run('capture-pane', '-p', '-t', name, ...(history ? ['-S', '-'] : []))
      .split('\n')
      .map((line) => line.replace(/\s+$/, ''))
      .join('\n')
  }

  /** The visible screen with its colours and attributes as SGR codes (`capture-pane -e`). */
  screenAnsi(name: string): string {
    return this.run('capture-pane', '-p', '-e', '-t', name)
  }

  /** Whether the session `name` is still there (its pane's program has not ended). */
  running(name: string): boolean {
    return spawnSync('tmux', ['-L', this.socket, 'has-session', '-t', name]).status === 0
  }

  type(name: string, text: string): void {
    this.run('send-keys', '-t', name, '-l', text)
  }

  key(name: string, key: string): void {
    this.run('send-keys', '-t', name, key)
  }

  /**
   * keel's exit status, once the wrapper shell has printed it (undefined before). Read from the screen, not from
   * `#{pane_dead_status}`: tmux 3.3 sometimes leaves an exited pane process unreaped, with no status.
   */
  exitStatus(name: string): number | undefined {
    const match = /\[keel exited (\d+)\]/.exec(this.screen(name))
    return match ? Number(match[1]) : undefined
  }

  dispose(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'])
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Polls until `check` holds (bounded); the failure shows the last screen. */
export async function until(
  check: () => boolean,
  what: string,
  timeoutMs: number,
  screen: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (check()) return
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the screen:\n${screen()}`)
    await new Promise((done) => setTimeout(done, 40))
  }
}
