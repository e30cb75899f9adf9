import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { proposalWords } from '@keel/door/words'
import { lastPlan, PLAN_USAGE, parsePlanWords, planHeader, planLines, standingPlan, type TodoItem } from '@keel/todo'
import type { Command, CommandActions } from './command.ts'

/** Where the plan text ends and the checklist begins in the file `$EDITOR` opens. */
const CHECKLIST_MARK = '# Checklist (one task a line; this line stays)'

export const plan: Command = {
  name: 'plan',
  description: `The plan: show it, edit it as the person, or answer a proposal (/${PLAN_USAGE} | edit: the proposal in $EDITOR)`,
  run: async (actions, arg) => {
    const plans = actions.ctx.get('plans')
    const words = arg.split(/\s+/).filter(Boolean)
    if (!words.length) return show(actions)
    if (!plans) return actions.note('error', 'plans are not loaded (add @keel/todo to the composition)')
    if (words[0] === 'edit' && words.length === 1) return editProposal(actions)
    const request = parsePlanWords(words)
    if (request === 'show') return show(actions)
    if ('error' in request) return actions.note('error', request.error)
    if (request.op === 'edit') {
      const refused = plans.edit(actions.agent.session, request.edit)
      return refused ? actions.note('error', refused.error) : undefined
    }
    if (actions.busy()) return
    const answered = await plans.answer(actions.agent, request.answer)
    if ('error' in answered) actions.note('error', answered.error)
  },
}

function show(actions: CommandActions): void {
  const events = actions.agent.session.events
  const proposal = actions.ctx.get('plans')?.proposal(actions.agent.session)
  if (proposal?.status === 'pending')
    actions.note('info', `${proposalWords(proposal).text}: /plan approve [ask|auto], /plan edit, /plan reject <why>`)
  const todos = lastPlan(events)
  if (!todos) {
    actions.note('info', 'No plan has been written in this session yet.')
    return
  }
  const where = standingPlan(events) !== null ? 'standing' : 'cleared when a later turn started'
  actions.note(
    'info',
    [`Last ${planHeader(todos)} (${where})`, ...planLines(todos).map((line, i) => `  ${i + 1}. ${line}`)].join('\n'),
  )
}

/**
 * The pending proposal in `$EDITOR` (then `$VISUAL`, then `vi`): the plan text, a marked line, the checklist one task
 * a line. What the editor leaves becomes the draft (`plan/edit`); approving then runs the edited plan.
 */
async function editProposal(actions: CommandActions): Promise<void> {
  const plans = actions.ctx.get('plans')!
  const proposal = plans.proposal(actions.agent.session)
  if (proposal?.status !== 'pending') return actions.note('info', 'No plan is waiting for an answer.')
  const dir = mkdtempSync(join(tmpdir(), 'keel-plan-'))
  const file = join(dir, 'plan.md')
  try {
    writeFileSync(file, `${proposal.plan}\n\n${CHECKLIST_MARK}\n${proposal.todos.map((t) => t.content).join('\n')}\n`, {
      mode: 0o600,
    })
    const editor = process.env.EDITOR || process.env.VISUAL || 'vi'
    actions.tui.stop()
    let status: number | null
    try {
      status = spawnSync('sh', ['-c', `${editor} "$1"`, 'sh', file], { stdio: 'inherit' }).status
    } finally {
      actions.tui.start()
      actions.tui.requestRender(true)
    }
    if (status !== 0) return actions.note('warn', `the editor exited with ${status}; the plan is unchanged`)
    const text = readFileSync(file, 'utf8')
    const at = text.indexOf(CHECKLIST_MARK)
    if (at < 0) return actions.note('error', `the line "${CHECKLIST_MARK}" is gone; the plan is unchanged`)
    const todos: TodoItem[] = text
      .slice(at + CHECKLIST_MARK.length)
      .split('\n')
      .filter((line) => line.trim())
      .map((content) => ({ content, status: 'pending' }))
    const answered = await plans.answer(actions.agent, { kind: 'edit', plan: text.slice(0, at).trim(), todos })
    if ('error' in answered) actions.note('error', answered.error)
    else actions.note('info', 'Plan edited: /plan approve [ask|auto] to run it.')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
