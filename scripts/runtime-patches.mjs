// One edit esbuild makes to the sandbox runtime (@anthropic-ai/sandbox-runtime 0.0.83) as it bundles it: its
// `whichSync` spawned a `which` process synchronously, at its start (for ripgrep) and at every wrap (`which bash`),
// blocking the event loop a few ms each time (more under load) on the path of every sandboxed command. It now looks
// the program up on PATH in this process, with Keel's own lookup (packages/sandbox/src/which.ts), which answers what
// `which` answers. Sources run by tsx (the tests) use the runtime unchanged. A snippet that is not found fails the
// build: a new runtime needs this looked at again, not skipped.
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

const WHICH = fileURLToPath(new URL('../packages/sandbox/src/which.ts', import.meta.url))

const PATCHES = [
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

/** An esbuild plugin applying PATCHES to the runtime's dist/utils/which.js. */
export const sandboxRuntimePatches = {
  name: 'sandbox-runtime-patches',
  setup(build) {
    build.onLoad(
      { filter: /[\\/]@anthropic-ai[\\/]sandbox-runtime[\\/]dist[\\/]utils[\\/]which\.js$/ },
      async ({ path }) => {
        let contents = await readFile(path, 'utf8')
        for (const patch of PATCHES) {
          const at = contents.indexOf(patch.from)
          if (at < 0 || contents.indexOf(patch.from, at + 1) >= 0)
            throw new Error(`${path}: the sandbox runtime changed, this patch no longer applies once: ${patch.why}`)
          contents = contents.replace(patch.from, () => patch.to)
        }
        return { contents, loader: 'js' }
      },
    )
  },
}
