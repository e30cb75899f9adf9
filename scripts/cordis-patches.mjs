// Three edits esbuild makes to cordis's core (@cordisjs/core 3.18.1) as it bundles it. Each keeps what cordis does and
// drops work whose result is thrown away; together they take about a tenth off a cold `keel -p` before its first
// model request, which spent a third of its time in cordis's bookkeeping. Sources run by tsx (the tests) use cordis
// unchanged. A snippet that is not found fails the build: a new cordis needs these looked at again, not skipped.
import { readFile } from 'node:fs/promises'

const PATCHES = [
  {
    why: 'every event emitted with no listener for it (most of the internal/* events a plugin load emits) still ran a lookup that builds proxies, and emitted internal/event, which nothing listens to either',
    from: `    const name = args.shift();
    if (name !== "internal/event") {`,
    to: `    const name = args.shift();
    if (!this._hooks[name]?.length && !this._hooks["internal/event"]?.length) return;
    if (name !== "internal/event") {`,
  },
  {
    why: 'reading any service or mixin off a context (ctx.emit, ctx.sessions) built an Error, with its stack, for a warning that is almost never given; it is built when it is given',
    from: 'const error = new Error(`property ${name} is not registered, declare it as \\`inject\\` to suppress this warning`);',
    to: 'const error = () => new Error(`property ${name} is not registered, declare it as \\`inject\\` to suppress this warning`);',
  },
  {
    why: 'the warning built late has two frames more on top (the arrow that builds it, checkInject), dropped with the handler frame',
    from: `    const lines = error.stack.split("\\n");
    lines.splice(1, 1);`,
    to: `    error = error();
    const lines = error.stack.split("\\n");
    lines.splice(1, 3);`,
  },
  {
    why: "esbuild keeps names by redefining each function's name; cordis makes arrow functions on every property read, so each read paid for a property redefinition no one reads (classes and named functions keep theirs)",
    from: 'var __name = (target, value) => __defProp(target, "name", { value, configurable: true });',
    to: 'var __name = (target, value) => target.prototype === void 0 ? target : __defProp(target, "name", { value, configurable: true });',
  },
]

/**
 * An esbuild plugin applying PATCHES to @cordisjs/core/lib/index.mjs. It also answers reggol's (cordis's logger's)
 * question whether stdout takes colours with "no" instead of asking supports-color, which loads node:tty (about 3 ms
 * of a start whose stderr is not a terminal): Keel replaces cordis's log targets with its own colourless one
 * (quietCordisLogger in packages/cli/src/boot.ts), so the answer was never used.
 */
export const cordisPatches = {
  name: 'cordis-patches',
  setup(build) {
    build.onResolve({ filter: /^supports-color$/ }, ({ importer }) =>
      /[\\/]reggol[\\/]/.test(importer) ? { path: 'supports-color', namespace: 'keel-no-color' } : undefined,
    )
    build.onLoad({ filter: /.*/, namespace: 'keel-no-color' }, () => ({
      contents: 'module.exports = { supportsColor: () => false, stdout: false, stderr: false }',
      loader: 'js',
    }))
    build.onLoad({ filter: /[\\/]@cordisjs[\\/]core[\\/]lib[\\/]index\.mjs$/ }, async ({ path }) => {
      let contents = await readFile(path, 'utf8')
      for (const patch of PATCHES) {
        const at = contents.indexOf(patch.from)
        if (at < 0 || contents.indexOf(patch.from, at + 1) >= 0)
          throw new Error(`${path}: cordis changed, this patch no longer applies once: ${patch.why}`)
        contents = contents.replace(patch.from, () => patch.to)
      }
      return { contents, loader: 'js' }
    })
  },
}
