// A long session in the TUI: what `keel -c` costs to first paint (the log reopened, its fold, the app, its first frame)
// and what a key costs (the editor's change and the frame it asks for), at 2,000 turns against 20 turns in the same
// run. The first paint is timed in a fresh process each round (bench/tui-paint.ts), as a person gets it: in one
// process the second paint finds the parser and renderer compiled and says nothing of a real start. The transcript
// draws a window of a few screens, so the frame and the keys should not grow with the session; reading the log does.
import { execFileSync, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ScriptStep } from '@keel/llm'
import { KeelApp } from '../packages/tui/src/app.ts'
import { loadHighlighter } from '../packages/tui/src/highlight.ts'
import { fillSession, RecordingTerminal } from '../packages/tui/tests/support.ts'
import { HAS_TMUX, Tmux } from '../packages/tui/tests/tmux.ts'
import { makeKeel } from '../test-support/harness.ts'
import { median, ms, ratio, row } from './stats.ts'
import { answer } from './tui-answer.ts'

const ROUNDS = Number(process.env.KEEL_BENCH_RUNS ?? 3)
const KEYS = 30
const root = fileURLToPath(new URL('..', import.meta.url))

interface Figures {
  key: number
  /** The frame drawn when the highlighter arrives (its code entries redrawn), then the first key. */
  arrival: number
  firstKey: number
}

type Keel = Awaited<ReturnType<typeof makeKeel>>

async function measure(keel: Keel, agent: ReturnType<Keel['agent']>): Promise<Figures> {
  const terminal = new RecordingTerminal(100, 40)
  const app = new KeelApp({ ctx: keel.ctx, terminal, agent, cwd: keel.cwd, modelSpec: 'scripted/test', version: '0' })
  app.frame(100)
  void app.run()
  // The first frame met code and started the highlighter's load (once per process: cold in the first round only).
  await loadHighlighter()
  const arrivalAt = performance.now()
  app.frame(100)
  const arrival = performance.now() - arrivalAt
  await new Promise((done) => setTimeout(done, 0))
  const keyAt = performance.now()
  terminal.type('a')
  app.frame(100)
  const firstKey = performance.now() - keyAt
  const keys: number[] = []
  for (let i = 0; i < KEYS; i++) {
    const at = performance.now()
    terminal.type(i % 2 ? '\x7f' : 'b')
    app.frame(100)
    keys.push(performance.now() - at)
  }
  await app.quit()
  return { key: median(keys), arrival, firstKey }
}

/** What bench/tui-paint.ts measured in a process of its own. */
interface Paint {
  reopen: number
  app: number
  frame: number
  paint: number
}
const paints = new Map<number, Paint[]>()
for (let round = 0; round < ROUNDS; round++)
  for (const turns of round % 2 ? [2000, 20] : [20, 2000]) {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/tui-paint.ts', String(turns)], {
      cwd: root,
      encoding: 'utf8',
    })
    if (run.status !== 0) throw new Error(`bench/tui-paint.ts ${turns}: ${run.stderr}`)
    paints.set(turns, [...(paints.get(turns) ?? []), JSON.parse(run.stdout) as Paint])
  }
const paintOf = (turns: number, key: keyof Paint) => median(paints.get(turns)!.map((figures) => figures[key]))
row('first paint, 20 turns (baseline)', ms(paintOf(20, 'paint')))
row('first paint, 2,000 turns', ms(paintOf(2000, 'paint')), ratio(paintOf(2000, 'paint'), paintOf(20, 'paint')))
const PARTS = { reopen: 'the log reopened', app: 'the fold and the app', frame: 'the first frame' } as const
for (const [part, label] of Object.entries(PARTS) as [keyof typeof PARTS, string][])
  row(`  ${label}, 2,000 turns (20 turns)`, ms(paintOf(2000, part)), `(${ms(paintOf(20, part))})`)

// The whole of it as a person sees it, when tmux is here: `keel -c` (the bundle) spawned in a terminal until the last
// turn's answer is on its screen (read every few ms: each read is a tmux process), against the same for 20 turns.
if (HAS_TMUX) {
  const require = createRequire(import.meta.url)
  const { bundleIsFresh } = require('../bin/bundle-fresh.js') as { bundleIsFresh(root: string): boolean }
  if (!bundleIsFresh(root)) execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), '--quiet'])
  const tmux = new Tmux(100, 40)
  const logs = new Map<number, Keel>()
  for (const turns of [20, 2000]) {
    const keel = await makeKeel({ steps: [] as ScriptStep[] })
    const written = keel.agent({ fileNow: true })
    fillSession(written.session, turns, answer)
    keel.ctx.agents.close(written)
    logs.set(turns, keel)
  }
  const shown = new Map<number, number[]>()
  try {
    for (let round = 0; round < ROUNDS; round++)
      for (const turns of round % 2 ? [2000, 20] : [20, 2000]) {
        const { home, cwd } = logs.get(turns)!
        const name = `paint-${round}-${turns}`
        const started = performance.now()
        tmux.start(
          name,
          `cd '${cwd}' && KEEL_HOME='${home}' exec '${process.execPath}' '${join(root, 'bin/keel.js')}' -c --model scripted/demo`,
        )
        const last = `Turn ${turns}:`
        while (!tmux.screen(name).includes(last)) {
          if (performance.now() - started > 30_000)
            throw new Error(`keel -c never showed ${last}:\n${tmux.screen(name)}`)
        }
        shown.set(turns, [...(shown.get(turns) ?? []), performance.now() - started])
        // Ctrl+C twice quits, releasing the session for the next round (the pane, and the server with it, then end).
        tmux.key(name, 'C-c')
        tmux.key(name, 'C-c')
        const quitting = performance.now()
        while (tmux.running(name) && performance.now() - quitting < 5_000)
          await new Promise((done) => setTimeout(done, 20))
      }
  } finally {
    tmux.dispose()
    for (const keel of logs.values()) await keel.dispose()
  }
  const of = (turns: number) => median(shown.get(turns)!)
  row('keel -c in a terminal → last turn shown, 20 turns', ms(of(20)))
  row('keel -c in a terminal → last turn shown, 2,000', ms(of(2000)), ratio(of(2000), of(20)))
} else console.log('(keel -c in a terminal: tmux is not installed)')

const sessions: { turns: number; keel: Keel; agent: ReturnType<Keel['agent']> }[] = []
for (const turns of [20, 2000]) {
  const keel = await makeKeel({ steps: [] as ScriptStep[] })
  const agent = keel.agent()
  fillSession(agent.session, turns, answer)
  sessions.push({ turns, keel, agent })
}
const results = new Map<number, Figures[]>()
for (let round = 0; round < ROUNDS; round++) {
  // The long session first in the first round: its first key is the one that meets the highlighter's arrival.
  for (const { turns, keel, agent } of round % 2 ? sessions : [...sessions].reverse()) {
    const figures = await measure(keel, agent)
    results.set(turns, [...(results.get(turns) ?? []), figures])
  }
}
const of = (turns: number, key: keyof Figures) => median(results.get(turns)!.map((figures) => figures[key]))
row('a key, 20 turns (baseline)', ms(of(20, 'key')))
row('a key, 2,000 turns', ms(of(2000, 'key')), ratio(of(2000, 'key'), of(20, 'key')))
const cold = results.get(2000)![0]!
row('frame as the highlighter arrives, 2,000 turns', ms(cold.arrival))
row('first key, 2,000 turns', ms(cold.firstKey))
for (const { keel } of sessions) await keel.dispose()
