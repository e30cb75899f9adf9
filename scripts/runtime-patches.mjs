// Edits esbuild makes to the sandbox runtime (@anthropic-ai/sandbox-runtime 0.0.83) as it bundles it, each on the
// path of a sandboxed command:
// - its `whichSync` spawned a `which` process synchronously, at its start (for ripgrep) and at every wrap (`which
//   bash`), blocking the event loop a few ms each time (more under load). It now looks the program up on PATH in this
//   process, with Keel's own lookup (packages/sandbox/src/which.ts), which answers what `which` answers.
// - its start waited for its bridge's sockets by looking at once, again at once, then after 100, 200 and 300 ms: socat
//   takes a few ms to listen, so the first sandboxed command of a process waited 100 ms more about one run in six
//   (more under load). It now looks every 5 ms, for the same 0.6 s in all before it gives up.
// Sources run by tsx (the tests) use the runtime unchanged. A snippet that is not found fails the build: a new runtime
// needs these looked at again, not skipped.
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

const WHICH = fileURLToPath(new URL('../packages/sandbox/src/which.ts', import.meta.url))

const WHICH_PATCHES = [
  {
    why: 'whichSync spawned `which` synchronously at every wrap',
    from: `    // Fallback to Node.js implementation
    const result = spawnSync('which', [bin], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: 1000,
    });
    if (result.status === 0 && result.stdout) {
        return result.stdout.trim();
    }
    return null;`,
    to: `    return keelWhich(bin) ?? null;`,
  },
  {
    why: 'the lookup that replaces the spawn',
    from: `import { spawnSync } from 'node:child_process';`,
    to: `import { which as keelWhich } from ${JSON.stringify(WHICH)};`,
  },
]

const BRIDGE_PATCHES = [
  {
    why: 'the bridge sockets were looked for 5 times, 0.6 s in all',
    from: `    const maxAttempts = 5;
    for (let i = 0; i < maxAttempts; i++) {`,
    to: `    const maxAttempts = 121;
    for (let i = 0; i < maxAttempts; i++) {`,
  },
  {
    why: 'the look for the bridge sockets slept 100 ms after its second try',
    from: `        await new Promise(resolve => setTimeout(resolve, i * 100));`,
    to: `        await new Promise(resolve => setTimeout(resolve, i === 0 ? 0 : 5));`,
  },
]

/** The runtime's files, below its dist/, and the patches each gets. */
const FILES = [
  { file: /[\\/]@anthropic-ai[\\/]sandbox-runtime[\\/]dist[\\/]utils[\\/]which\.js$/, patches: WHICH_PATCHES },
  {
    file: /[\\/]@anthropic-ai[\\/]sandbox-runtime[\\/]dist[\\/]sandbox[\\/]linux-sandbox-utils\.js$/,
    patches: BRIDGE_PATCHES,
  },
]

/** An esbuild plugin applying the patches of FILES. */
export const sandboxRuntimePatches = {
  name: 'sandbox-runtime-patches',
  setup(build) {
    for (const { file, patches } of FILES)
      build.onLoad({ filter: file }, async ({ path }) => {
        let contents = await readFile(path, 'utf8')
        for (const patch of patches) {
          const at = contents.indexOf(patch.from)
          if (at < 0 || contents.indexOf(patch.from, at + 1) >= 0)
            throw new Error(`${path}: the sandbox runtime changed, this patch no longer applies once: ${patch.why}`)
          contents = contents.replace(patch.from, () => patch.to)
        }
        return { contents, loader: 'js' }
      })
  },
}
