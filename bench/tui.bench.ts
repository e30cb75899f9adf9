// The TUI on a long session (issue 34): the transcript's first paint (the fold of the log and its first frame) and
// the frame a key redraws, at 2,000 turns against a 20-turn session in the same run; and the same 2,000 turns drawn
// whole (every window opened with /history), as the TUI drew them before the transcript window. The editor, footer
// and terminal write cost the same at any length and are left out. Prints figures; asserts nothing.
import type { SessionEvent } from '@keel/session'
import { foldEvents } from '../packages/door/src/transcript.ts'
import { TranscriptView } from '../packages/tui/src/transcript.ts'
import { median, ms, ratio, row } from './stats.ts'

const WIDTH = 100
const RUNS = 7
const KEYS = 30

/** `turns` turns as a real session logs them: a prompt, a tool call and its output, a Markdown answer. */
function events(turns: number): SessionEvent[] {
  let seq = 0
  const at = (type: string, data: object) => ({ type, seq: seq++, time: 0, data }) as SessionEvent
  const out: SessionEvent[] = []
  for (let turn = 1; turn <= turns; turn++) {
    const callId = `c${turn}`
    out.push(
      at('turn/start', { turn, trigger: 'prompt' }),
      at('user/message', {
        message: { role: 'user', content: [{ type: 'text', text: `Please look at file ${turn}` }] },
      }),
      at('step/start', { turn, step: 1 }),
      at('tool/call', { turn, step: 1, callId, name: 'bash', arguments: JSON.stringify({ command: `cat f${turn}` }) }),
      at('tool/result', {
        turn,
        step: 1,
        callId,
        content: [{ type: 'text', text: 'line one\nline two\nline three\n[exit code 0 · 0.0 s]' }],
        isError: false,
      }),
      at('assistant/message', {
        turn,
        step: 1,
        message: {
          role: 'assistant',
          content: [{ type: 'text', text: `The file **${turn}** holds three lines:\n\n- one\n- two\n- three` }],
        },
      }),
      at('turn/end', { turn, reason: 'completed' }),
    )
  }
  return out
}

function screen(log: readonly SessionEvent[], whole: boolean) {
  const transcript = new TranscriptView({ present: (name, args) => ({ title: `${name} ${args}` }) })
  const paint = () => {
    transcript.reset(foldEvents(log))
    if (whole) {
      transcript.render(WIDTH)
      while (transcript.showEarlier() > 0) {}
    }
    return transcript.render(WIDTH).length
  }
  // A key redraws every component; the transcript's part is its whole render from the cache.
  const key = () => transcript.render(WIDTH).length
  return { paint, key }
}

function measure(turns: number, whole = false): { paint: number; key: number; lines: number } {
  const log = events(turns)
  const { paint, key } = screen(log, whole)
  const paints: number[] = []
  const keys: number[] = []
  let lines = 0
  for (let run = 0; run < RUNS; run++) {
    let start = performance.now()
    lines = paint()
    paints.push(performance.now() - start)
    for (let i = 0; i < KEYS; i++) {
      start = performance.now()
      key()
      keys.push(performance.now() - start)
    }
  }
  return { paint: median(paints), key: median(keys), lines }
}

const short = measure(20)
const long = measure(2000)
const whole = measure(2000, true)
row('20 turns (baseline): first paint, a key', ms(short.paint), ms(short.key), `${short.lines} lines`)
row(
  '2,000 turns, windowed: first paint, a key',
  `${ms(long.paint)} (${ratio(long.paint, short.paint)})`,
  `${ms(long.key)} (${ratio(long.key, short.key)})`,
  `${long.lines} lines`,
)
row(
  '2,000 turns drawn whole (before the window)',
  `${ms(whole.paint)} (${ratio(whole.paint, short.paint)})`,
  `${ms(whole.key)} (${ratio(whole.key, short.key)})`,
  `${whole.lines} lines`,
)
