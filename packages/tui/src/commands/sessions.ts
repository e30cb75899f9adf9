import { escapeLine } from '../safe.ts'
import type { Command } from './command.ts'

export const sessions: Command = {
  name: 'sessions',
  description: 'List the sessions of this directory',
  run: (actions) => {
    const listed = actions.ctx.sessions.list(actions.cwd).filter((summary) => !summary.parent)
    if (!listed.length) return actions.note('info', 'No sessions in this directory yet.')
    const lines = listed.slice(0, 20).map((summary) => {
      const when = new Date(summary.updatedAt).toISOString().replace('T', ' ').slice(0, 16)
      const mark = summary.id === actions.agent.id ? '*' : ' '
      return `${mark} ${summary.id}  ${when}  ${escapeLine(summary.title || '(no prompt)').slice(0, 60)}`
    })
    if (listed.length > 20) lines.push(`  … and ${listed.length - 20} older`)
    lines.push('', '/resume <id or prefix> opens one; * marks this session.')
    actions.note('info', lines.join('\n'))
  },
}
