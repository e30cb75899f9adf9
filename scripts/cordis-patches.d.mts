import type { Plugin } from 'esbuild'

/** See cordis-patches.mjs. */
export const cordisPatches: Plugin
