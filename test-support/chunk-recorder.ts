import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Writes a `--require` preload into `dir` and returns its path. It notes each bundle chunk bin/bundle-loader.js
 * compiles, one line per chunk appended to the file named by $KEEL_CHUNK_LIST: the chunk's file URL, a space, and
 * `cached` (V8 took its cached bytecode) or `compiled`. The loader reads `vm.Script` when it compiles a chunk, so a
 * subclass installed before it runs sees every one.
 */
export function writeChunkRecorder(dir: string): string {
  const path = join(dir, 'chunk-recorder.cjs')
  writeFileSync(
    path,
    `const vm = require('node:vm')
const { appendFileSync } = require('node:fs')
const { pathToFileURL } = require('node:url')
vm.Script = class extends vm.Script {
  constructor(code, options) {
    super(code, options)
    if (!options || !options.filename || !process.env.KEEL_CHUNK_LIST) return
    const took = options.cachedData !== undefined && !this.cachedDataRejected
    appendFileSync(process.env.KEEL_CHUNK_LIST, pathToFileURL(options.filename).href + (took ? ' cached' : ' compiled') + '\\n')
  }
}
`,
  )
  return path
}
