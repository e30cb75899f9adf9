import type { TurnResult } from '@keel/agent'
import type { AgentDefinition } from '@keel/extend'

export interface TaskPolicy {
  maxConcurrent: number
  maxDepth: number
}

/** The model-facing description of `task`. */
export function describeTask(
  policy: TaskPolicy,
  agents: readonly Pick<AgentDefinition, 'name' | 'description'>[] = [],
): string {
  const text = [
    'Delegate a self-contained task to a subagent: a fresh agent with its own session, context and plan, working in the same directory with your tools.',
    'It sees only `prompt`, not this conversation, so include every path, fact and constraint it needs and say what its final answer must report.',
    "Its final answer comes back as this tool's result.",
    `Several task calls in one message run in parallel (up to ${policy.maxConcurrent} at once); use that for independent pieces of work.`,
    'Do not delegate what a couple of tool calls of your own would do.',
    policy.maxDepth <= 1
      ? 'Subagents cannot start subagents of their own.'
      : `Subagents may nest up to ${policy.maxDepth} levels deep.`,
  ].join(' ')
  if (!agents.length) return text
  return [
    text,
    'Agents you can name in `agent` (each runs with its own instructions and tools; use one when the task fits its description):',
    ...agents.map((agent) => `- ${agent.name}: ${agent.description}`),
  ].join('\n')
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

/** `[subagent <id> · 3 steps · 2 tool calls]`: where to find the child's whole log, and what it cost. */
export function footer(sessionId: string, result: Pick<TurnResult, 'steps' | 'toolCalls'>): string {
  return `[subagent ${sessionId} · ${plural(result.steps, 'step')} · ${plural(result.toolCalls, 'tool call')}]`
}

/** The text the parent model gets back, and whether it is an error. */
export function resultOf(sessionId: string, result: TurnResult): { text: string; isError: boolean } {
  const answer = result.text.trim()
  const tail = footer(sessionId, result)
  switch (result.reason) {
    case 'completed':
      return { isError: false, text: `${answer || '(The subagent finished without a final answer.)'}\n\n${tail}` }
    case 'max-tokens':
      return {
        isError: false,
        text: `${answer}\n\n(The subagent's answer was cut off at the output token limit.)\n${tail}`,
      }
    case 'aborted':
      return { isError: true, text: `Error: the subagent was cancelled before it finished.\n${tail}` }
    case 'step-limit':
      return {
        isError: true,
        text: `Error: the subagent stopped at its step limit before finishing.${answer ? `\nIts last text:\n${answer}` : ''}\n${tail}`,
      }
    default:
      return { isError: true, text: `Error: the subagent failed: ${result.message ?? result.reason}\n${tail}` }
  }
}
