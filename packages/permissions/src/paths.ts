// Whether a path lies inside the working directory, judged on real paths: a symlink inside the cwd that points
// elsewhere leads outside (dangling or not), and a path that does not exist yet is judged by its nearest existing
// ancestor.
import { lstatSync, readlinkSync, realpathSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'

export function realPath(path: string, hops = 0): string {
  const missing: string[] = []
  let dir = resolve(path)
  for (;;) {
    try {
      return join(realpathSync(dir), ...missing.reverse())
    } catch {
      // A dangling symlink: follow it by hand, since writing through it creates its target.
      if (hops < 40) {
        try {
          if (lstatSync(dir).isSymbolicLink())
            return realPath(join(resolve(dirname(dir), readlinkSync(dir)), ...missing.reverse()), hops + 1)
        } catch {}
      }
      const parent = dirname(dir)
      if (parent === dir) return resolve(path)
      missing.push(basename(dir))
      dir = parent
    }
  }
}

export function isInside(path: string, cwd: string): boolean {
  const rel = relative(realPath(cwd), realPath(path))
  return rel === '' || (!(rel === '..' || rel.startsWith(`..${sep}`)) && !isAbsolute(rel))
}
