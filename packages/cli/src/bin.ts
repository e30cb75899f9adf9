// The command line's entry (bin/keel.js loads it). `--help` and `--version` are answered from the argument table
// alone; every other command loads main.ts and, with it, cordis, the plugins and the front doors it needs.
import { readFileSync } from 'node:fs'
import { helpText, parse } from './args.ts'
import { shipped } from './root.ts'

export async function main(argv: string[]): Promise<number> {
  let kind: string | undefined
  try {
    kind = parse(argv).command.kind
  } catch {
    // main reports the usage error, one line, with its exit code.
  }
  if (kind === 'help' || kind === 'version') {
    const version: string = JSON.parse(readFileSync(shipped('packages/cli/package.json'), 'utf8')).version
    process.stdout.write((kind === 'help' ? helpText(version) : `keel ${version}`) + '\n')
    return 0
  }
  return (await import('./main.ts')).main(argv)
}
