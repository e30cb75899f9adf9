import type { LlmRequest } from '@keel/llm'
import type { Message } from '@keel/session'
import type { TodoItem } from '@keel/todo'

/** Tool output beyond this many characters is cut in the middle before the summariser sees it. */
const TOOL_RESULT_CHARS = 2_000
/** Tool-call arguments beyond this many characters are cut the same way. */
const TOOL_ARGUMENT_CHARS = 600

export const SUMMARY_SYSTEM =
  'You turn the transcript of a coding-agent session into a handoff note for the agent that continues it. You never continue the work yourself, call tools, or address the user.'

/** Opens the request so it reads (and routes, for the scripted model) as a summary request. */
export const SUMMARY_OPENING = 'Summarise this coding-agent conversation for a handoff.'

export function summaryInstruction(planCarried: boolean): string {
  return [
    'Write the handoff note now, in at most about 400 words of plain prose and short lists:',
    "1. The user's goal and every explicit requirement or constraint, in their words where wording matters.",
    '2. What was done and learned: files read or changed (exact paths), commands run and their outcomes, errors and how they were resolved.',
    '3. Decisions taken and why.',
    '4. What is unfinished, and what was about to happen next.',
    'If the transcript starts with an earlier summary, fold it in. State only what the transcript shows.',
    ...(planCarried ? ['The todo list is carried separately: do not copy it.'] : []),
  ].join('\n')
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text
  const head = Math.ceil(max * 0.6)
  const tail = max - head
  return `${text.slice(0, head)}\n[… ${text.length - max} characters omitted …]\n${text.slice(text.length - tail)}`
}

function textBlocks(content: readonly { type: string; text?: string }[]): string {
  return content
    .map((block) => (block.type === 'text' ? (block.text ?? '') : block.type === 'image' ? '[image]' : ''))
    .join('')
}

/** A plain-text transcript: the summariser needs no tools, and providers reject tool blocks in a request without tools. */
export function renderTranscript(messages: readonly Message[]): string {
  const names = new Map<string, string>()
  const parts: string[] = []
  for (const message of messages) {
    if (message.role === 'user') {
      const label =
        message.source === 'compaction' ? 'Earlier summary' : message.source === 'context' ? 'Context' : 'User'
      parts.push(`[${label}]\n${textBlocks(message.content)}`)
    } else if (message.role === 'assistant') {
      const lines: string[] = []
      for (const block of message.content) {
        if (block.type === 'text' && block.text.trim()) lines.push(block.text)
        else if (block.type === 'tool-call') {
          names.set(block.id, block.name)
          lines.push(`(calls ${block.name} ${clip(block.arguments, TOOL_ARGUMENT_CHARS)})`)
        }
      }
      if (lines.length) parts.push(`[Assistant]\n${lines.join('\n')}`)
    } else {
      for (const block of message.content) {
        const name = names.get(block.toolCallId) ?? 'tool'
        parts.push(
          `[${name} ${block.isError ? 'failed' : 'result'}]\n${clip(textBlocks(block.content), TOOL_RESULT_CHARS)}`,
        )
      }
    }
  }
  return parts.join('\n\n')
}

export function summaryRequest(
  messages: readonly Message[],
  options: { planCarried: boolean; maxTokens: number; maxTranscriptChars?: number; sessionId: string },
): LlmRequest {
  let transcript = renderTranscript(messages)
  if (options.maxTranscriptChars !== undefined)
    transcript = clip(transcript, Math.max(1_000, options.maxTranscriptChars))
  const text = `${SUMMARY_OPENING}\n\n<transcript>\n${transcript}\n</transcript>\n\n${summaryInstruction(options.planCarried)}`
  return {
    system: SUMMARY_SYSTEM,
    messages: [{ role: 'user', content: [{ type: 'text', text }] }],
    tools: [],
    maxTokens: options.maxTokens,
    sessionId: options.sessionId,
  }
}

export const SUMMARY_HEADER =
  'Earlier parts of this conversation were compacted to save context. What happened in them:'

/**
 * The plan as a reference block: the list exactly as last written, statuses spelled out. It describes state and
 * asks only that the list stay whole when it is next written; it never asks to redo anything.
 */
export function planBlock(todos: readonly TodoItem[]): string {
  const lines = todos.map((todo) => `- [${todo.status}] ${todo.content.replace(/\n/g, '\n  ')}`)
  return [
    '<plan-state>',
    'Your todo list as you last wrote it with todo_write (state for reference; completed items are done). When you next update it, send the whole list, completed items included.',
    ...lines,
    '</plan-state>',
  ].join('\n')
}

export function summaryText(summary: string, plan: readonly TodoItem[] | null): string {
  return [SUMMARY_HEADER, '', summary.trim(), ...(plan ? ['', planBlock(plan)] : [])].join('\n')
}
