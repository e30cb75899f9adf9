import { createRequire } from 'node:module'

/** Whether this process has loaded the shell parser (mvdan-sh is CommonJS: loaded, it is in require's cache). */
export const parserLoaded = (): boolean =>
  Object.keys(createRequire(import.meta.url).cache).some((path) => path.includes('/mvdan-sh/'))
