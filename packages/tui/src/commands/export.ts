import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { exportFromStore } from '@keel/door/export'
import { errorLine } from '@keel/session/text'
import { escapeLine } from '../safe.ts'
import type { Command } from './command.ts'

export const exportCommand: Command = {
  name: 'export',
  description: 'Write this session as Markdown (or HTML for a .html name): /export [file]',
  run: (actions, arg) => {
    const id = actions.agent.id
    const file = arg || `keel-session-${id.slice(0, 8)}.md`
    const format = /\.html?$/i.test(file) ? 'html' : 'markdown'
    const path = resolve(actions.cwd, file)
    try {
      // The same document `keel sessions export` writes (@keel/door/export), subagents read from their own logs.
      writeFileSync(path, exportFromStore(actions.ctx.sessions, id, format))
    } catch (error) {
      return actions.note('error', `Cannot export to ${escapeLine(path)}: ${escapeLine(errorLine(error, 300))}`)
    }
    actions.note('info', `Wrote ${format === 'html' ? 'HTML' : 'Markdown'} of this session to ${escapeLine(path)}.`)
  },
}
