import type { Context } from 'cordis'
import type { Config } from './config.ts'
import { editTool } from './edit.ts'
import { readTool } from './read.ts'
import { globTool, grepTool, lsTool } from './search.ts'
import { writeTool } from './write.ts'

export { Config } from './config.ts'
export { readTool, ReadParameters, numbered } from './read.ts'
export { writeTool, WriteParameters } from './write.ts'
export { editTool, EditParameters, occurrences, lineNumbersOf } from './edit.ts'
export { grepTool, lsTool, globTool, GrepParameters, LsParameters, GlobParameters, GREP_LINE_CHARS } from './search.ts'
export { diffDetails, unifiedDiff, type UnifiedDiff } from './diff.ts'
export { readLineWindow, type LineWindow, type WindowLine } from './lines.ts'
export { resolvePath, resolveLinks, displayPath, isInside, PathError, type ResolvedPath, type Scope } from './paths.ts'
export { openRegular, replaceFile, kindOf } from './open.ts'
export { sniff, type Sniffed } from './sniff.ts'
export { walk, type WalkOptions, type WalkResult } from './files.ts'

export const name = 'keel-fs'
export const inject = ['tools']

export const FS_TOOLS = ['read', 'write', 'edit', 'grep', 'glob', 'ls'] as const

/** Every tool is a registration effect of this plugin: disposing it removes all six. */
export function apply(ctx: Context, config: Config): void {
  for (const make of [readTool, writeTool, editTool, grepTool, globTool, lsTool]) ctx.tools.register(make(config))
}
