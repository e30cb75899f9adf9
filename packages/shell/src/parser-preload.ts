import type { Agent, AgentDelta } from '@keel/agent'
import { loadShellParser, needsShellParser } from '@keel/permissions'

/** A bash call's `command` as far as the model has written it: the JSON string's start, undecoded. */
const COMMAND_SO_FAR = /"command"\s*:\s*"((?:[^"\\]|\\.)*)/
/** The word being written: judged once it ends (`tim` may become `time`, `in` may become `install.sh`). */
const OPEN_WORD = /[\w./:,+@%=-]*$/
/**
 * A call's argument text is read again at each delta, so it is read only this far: a command whose start is plain
 * words for longer is judged as before, the parser loading at its check (a model's megabyte of arguments in tiny
 * deltas must not cost the main thread the square of it).
 */
const WATCHED_CHARS = 8192

/**
 * The permission check of a command with a pipe, a redirect or a quote needs the shell parser (~60 ms of code to
 * load, ~21 MB once loaded, once a process), and a command of plain words never does. The parser starts loading as
 * soon as the command the model is writing shows it will need it, while the rest of the call streams in, instead of
 * in front of the call's check. Per agent: the argument text of the bash calls of the reply being written.
 */
export function parserPreload(load: () => Promise<void> = loadShellParser): (agent: Agent, delta: AgentDelta) => void {
  const written = new WeakMap<Agent, Map<number, string>>()
  let started = false
  return (agent, delta) => {
    if (started || delta.kind !== 'tool-input') return
    let calls = written.get(agent)
    if (!calls) written.set(agent, (calls = new Map()))
    // A call's first delta names its tool (a new reply numbers its calls from 0 again).
    if (delta.name !== undefined) {
      if (delta.name === 'bash') calls.set(delta.index, delta.text)
      else calls.delete(delta.index)
      return
    }
    const before = calls.get(delta.index)
    if (before === undefined) return
    const text = before + delta.text
    if (text.length > WATCHED_CHARS) {
      calls.delete(delta.index)
      return
    }
    calls.set(delta.index, text)
    const escaped = COMMAND_SO_FAR.exec(text)?.[1]
    if (escaped === undefined) return
    // Left undecoded: a JSON escape (a quote, a backslash, a newline) is a backslash, which is shell syntax too.
    const settled = escaped.replace(OPEN_WORD, '')
    if (!settled.trim() || !needsShellParser(settled)) return
    started = true
    void load()
  }
}
