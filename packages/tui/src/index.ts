import { getCapabilities, ProcessTerminal, setCapabilities } from '@mariozechner/pi-tui'
import type { DoorContext } from '@keel/door'
import { modelSpecOf } from '@keel/agent'
import { KeelApp } from './app.ts'
import { scriptedLabel } from './model-switch.ts'

export { KeelApp, type AppOptions } from './app.ts'
export {
  foldEvent,
  foldEvents,
  emptyTranscript,
  type TranscriptState,
  type TranscriptEntry as Entry,
} from '@keel/door/transcript'
export { PlanPanel, planLines, planWindow } from './plan-panel.ts'
export { TranscriptView } from './transcript.ts'
export { guardLine } from './safe.ts'
export { scriptedLabel, parseModelArg, modelList } from './model-switch.ts'
export { KeelAutocomplete, PathIndex, matchPaths, atToken } from './complete.ts'

/** `keel` / `keel "prompt"`: the interactive terminal UI in the working directory. */
export async function runInteractive(door: DoorContext): Promise<number> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    process.stderr.write('keel: the interactive UI needs a terminal; use keel -p "…" for print mode\n')
    return 2
  }
  const { agent, repairs, resumed } = await door.openAgent()
  // Links print their URL: an OSC 8 link would hide where model-written text points.
  setCapabilities({ ...getCapabilities(), hyperlinks: false, images: null })
  // The model in use: a reopened session may have switched away from the flags' model (/model).
  const scripted = scriptedLabel(modelSpecOf(agent.model))
  const app = new KeelApp({
    ctx: door.ctx,
    terminal: new ProcessTerminal(),
    agent,
    cwd: door.cwd,
    modelSpec: modelSpecOf(agent.model),
    configuredModel: door.modelSpec,
    createModel: (spec, baseUrl) => door.createModel(spec, baseUrl),
    version: door.version,
    repairs,
    resumed,
    label: scripted?.label,
    intro: scripted?.intro,
    notify: door.notify,
  })
  const onSignal = () => {
    void app.quit(130)
  }
  process.once('SIGTERM', onSignal)
  process.once('SIGHUP', onSignal)
  try {
    return await app.run(door.prompt)
  } finally {
    process.off('SIGTERM', onSignal)
    process.off('SIGHUP', onSignal)
    await door.ctx.agents.closeAtExit(app.agent)
  }
}
