import { getCapabilities, ProcessTerminal, setCapabilities } from '@mariozechner/pi-tui'
import type { DoorContext } from '@keel/cli'
import { KeelApp } from './app.ts'

export { KeelApp, type AppOptions } from './app.ts'
export { foldEvent, foldEvents, emptyTranscript, type TranscriptState, type Entry } from './fold.ts'
export { PlanPanel, planLines, planWindow } from './plan-panel.ts'
export { TranscriptView } from './transcript.ts'
export { guardLine } from './safe.ts'

/** How the UI labels a scripted model, so nobody mistakes a demo for a model answering. */
export function scriptedLabel(modelSpec: string): { label: string; intro: string } | undefined {
  if (!modelSpec.startsWith('scripted/')) return undefined
  const name = modelSpec.slice('scripted/'.length)
  if (name === 'demo') {
    return {
      label: 'SCRIPTED DEMO',
      intro:
        'Scripted demo: the replies come from packages/llm/scripts/demo.json and no model is called.\nThe bash commands it shows really run, read-only, in this directory. Run `keel` with a real model to work for real.',
    }
  }
  return { label: 'SCRIPTED MODEL', intro: `Scripted model: replies come from the script ${name}; no model is called.` }
}

/** `keel` / `keel "prompt"`: the interactive terminal UI in the working directory. */
export async function runInteractive(door: DoorContext): Promise<number> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    process.stderr.write('keel: the interactive UI needs a terminal; use keel -p "…" for print mode\n')
    return 2
  }
  const { agent, repairs, resumed } = await door.openAgent()
  // Links print their URL: an OSC 8 link would hide where model-written text points.
  setCapabilities({ ...getCapabilities(), hyperlinks: false, images: null })
  const scripted = scriptedLabel(door.modelSpec)
  const app = new KeelApp({
    ctx: door.ctx,
    terminal: new ProcessTerminal(),
    agent,
    cwd: door.cwd,
    modelSpec: door.modelSpec,
    version: door.version,
    repairs,
    resumed,
    label: scripted?.label,
    intro: scripted?.intro,
  })
  const onSignal = () => {
    void app.quit(130)
  }
  process.once('SIGTERM', onSignal)
  process.once('SIGHUP', onSignal)
  try {
    return await app.run(door.command.kind === 'interactive' ? door.command.prompt : undefined)
  } finally {
    process.off('SIGTERM', onSignal)
    process.off('SIGHUP', onSignal)
    door.ctx.agents.close(app.agent)
  }
}
