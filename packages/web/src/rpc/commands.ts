import { slashCommandList } from '@keel/door/slash'
import type { Method } from './method.ts'

/** The command files the composer completes after `/`: @keel/extend's discovery, through @keel/door. */
export const listCommands: Method<'commands.list'> = (served) => ({ commands: slashCommandList(served.cwd) })
