// The app under test, in process: the harness's plugins and scripted model, the app on a 100×40 recording terminal.
// One way to start it, wait for it and stop it, for every in-process app test.
import type { ScriptStep } from '@keel/llm'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'
import { KeelApp } from '../src/app.ts'
import { RecordingTerminal } from './support.ts'

export interface StartedApp {
  keel: Keel
  app: KeelApp
  terminal: RecordingTerminal
  /** The app's run: resolves with its exit code once it quits. */
  done: Promise<number>
}

const running: StartedApp[] = []

/** Boots the harness with `steps` (and `options`) and runs the app, submitting `prompt` first when given. */
export async function startApp(
  steps: ScriptStep[],
  options: Parameters<typeof makeKeel>[0] = {},
  run: { modelSpec?: string; prompt?: string } = {},
): Promise<StartedApp> {
  const keel = await makeKeel({ steps, ...options })
  const terminal = new RecordingTerminal(100, 40)
  const app = new KeelApp({
    ctx: keel.ctx,
    terminal,
    agent: keel.agent(),
    cwd: keel.cwd,
    modelSpec: run.modelSpec ?? 'scripted/test',
    version: '0.0.0-test',
  })
  const started = { keel, app, terminal, done: app.run(run.prompt) }
  running.push(started)
  return started
}

/** Quits every app startApp started and disposes its harness (an afterEach). */
export async function stopApps(): Promise<void> {
  for (const { app, keel } of running.splice(0)) {
    await app.quit()
    await keel.dispose()
  }
}

/** Resolves once the app's agent is idle and the status line no longer shows a running turn. */
export function appIdle(app: KeelApp, what = 'the turn to end'): Promise<void> {
  return waitFor(() => app.agent.status === 'idle' && app.status.runningSince === undefined, what, 15_000)
}
