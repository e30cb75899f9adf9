import type { Plugin } from 'esbuild'

/** See runtime-patches.mjs. */
export const sandboxRuntimePatches: Plugin
