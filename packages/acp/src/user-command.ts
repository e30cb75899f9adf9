import type { ContentBlock, SessionUpdate } from '@agentclientprotocol/sdk'
import { userCommandOf } from '@keel/door/shell-message'

/**
 * A prompt that is the person's `!command`, as every door reads one (@keel/door/shell-message): plain text only (a
 * prompt with a linked file is a prompt). Undefined for a prompt; empty for a bare `!`.
 */
export function promptCommand(prompt: readonly ContentBlock[]): string | undefined {
  if (!prompt.length || !prompt.every((block) => block.type === 'text')) return undefined
  return userCommandOf(prompt.map((block) => (block.type === 'text' ? block.text : '')).join(''))
}

/** A `!command` run as the client shows it: a finished `execute` call with its output, live and on replay. */
export function userCommandUpdate(seq: number, command: string, output: string): SessionUpdate {
  return {
    sessionUpdate: 'tool_call',
    toolCallId: `user-shell-${seq}`,
    title: command || 'shell command',
    kind: 'execute',
    status: 'completed',
    rawInput: { command },
    content: [{ type: 'content', content: { type: 'text', text: output } }],
  }
}
