// Runs every bench/*.bench.ts in turn (each prints its own figures). Benchmarks are never tests: nothing is asserted.
import { readdirSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { join } from 'node:path'

const dir = fileURLToPath(new URL('.', import.meta.url))
const only = process.argv.slice(2)
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.bench.ts') && (!only.length || only.some((o) => name.includes(o))))
  .sort()
for (const file of files) {
  console.log(`\n== ${file}`)
  await import(pathToFileURL(join(dir, file)).href)
}
