import type { DoorContext } from '@keel/cli'

/** Placeholder until this front door lands; the CLI reports it as unavailable. */
export async function runInteractive(door: DoorContext): Promise<number> {
  process.stderr.write(`keel: ${door.command.kind} mode is not built yet\n`)
  return 2
}
