import { resolve } from 'node:path'
import type { PlanEntry, SessionUpdate, StopReason, ToolCallContent, ToolCallLocation } from '@agentclientprotocol/sdk'
import type { AgentDelta } from '@keel/agent'
import { parseShellMessage } from '@keel/door/shell-message'
import { resultStatus, textOf, type SessionEvent, type TurnEndReason } from '@keel/session'
import type { TodoItem } from '@keel/todo'
import type { ToolCallView, ToolContent } from '@keel/tools'
import { diffFromDetails, diffOfEditArgs, type FileDiff } from './diff.ts'
import { userCommandUpdate } from './user-command.ts'

/**
 * How a finished turn answers `session/prompt`. `error` (and `interrupted`, which only crash repair writes) have no
 * stop reason: the prompt request fails instead.
 */
export function stopReasonOf(reason: TurnEndReason): StopReason | undefined {
  switch (reason) {
    case 'completed':
      return 'end_turn'
    case 'aborted':
      return 'cancelled'
    case 'step-limit':
      return 'max_turn_requests'
    case 'max-tokens':
      return 'max_tokens'
    default:
      return undefined
  }
}

/** The standing plan as an ACP `plan` update: the whole list every time, status 1:1, a constant priority. */
export function planUpdate(todos: readonly TodoItem[] | null): SessionUpdate {
  const entries: PlanEntry[] = (todos ?? []).map((todo) => ({
    content: todo.content,
    status: todo.status,
    priority: 'medium',
  }))
  return { sessionUpdate: 'plan', entries }
}

export interface ProjectorOptions {
  /** The session's working directory: relative paths in tool calls resolve against it. */
  cwd: string
  /** `ctx.tools.present`: title, kind, raw input and locations of a call. */
  present(name: string, args: string): ToolCallView
}

interface OpenCall {
  view: ToolCallView
  /** @keel/permissions asked about it (the card went `pending`). */
  asked?: boolean
}

function messageId(turn: number, step: number | 'user'): string {
  return step === 'user' ? `turn-${turn}-user` : `turn-${turn}-step-${step}`
}

function toolContent(content: ToolContent): ToolCallContent[] {
  return content.map(
    (block): ToolCallContent =>
      block.type === 'text'
        ? { type: 'content', content: { type: 'text', text: block.text } }
        : { type: 'content', content: { type: 'image', data: block.data, mimeType: block.mediaType } },
  )
}

/**
 * Turns one session's log events and live deltas into ACP `session/update` payloads. The same projector serves the
 * live stream and `session/load` replay, so a replayed session reads like the one the client watched: in replay the
 * user's and the assistant's messages come from the log; live, assistant text comes from the deltas as it streams.
 */
export class UpdateProjector {
  private turn = 0
  private step = 0
  private streamedText = false
  private streamedReasoning = false
  private readonly open = new Map<string, OpenCall>()

  constructor(private readonly options: ProjectorOptions) {}

  delta(delta: AgentDelta): SessionUpdate[] {
    if (!delta.text) return []
    const id = messageId(this.turn, this.step)
    if (delta.kind === 'text') {
      this.streamedText = true
      return [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: delta.text }, messageId: id }]
    }
    if (delta.kind === 'reasoning') {
      this.streamedReasoning = true
      return [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: delta.text }, messageId: id }]
    }
    return []
  }

  event(event: SessionEvent, replay: boolean): SessionUpdate[] {
    switch (event.type) {
      case 'turn/start':
        this.turn = event.data.turn
        this.step = 0
        return []
      case 'step/start':
        this.turn = event.data.turn
        this.step = event.data.step
        this.streamedText = false
        this.streamedReasoning = false
        return []
      case 'user/message': {
        const message = event.data.message
        // The person's `!command` (recorded by @keel/door/user-command): its card, live and on replay alike.
        if (message.source === 'shell') {
          const { command, output } = parseShellMessage(textOf(message.content))
          return [userCommandUpdate(event.seq, command, output)]
        }
        if (!replay || (message.source ?? 'user') !== 'user') return []
        const id = messageId(this.turn, 'user')
        // A replayed prompt's images go back as the client sent them (session/load shows what was asked).
        return message.content.flatMap((block): SessionUpdate[] =>
          block.type === 'text' && block.text
            ? [{ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: block.text }, messageId: id }]
            : block.type === 'image'
              ? [
                  {
                    sessionUpdate: 'user_message_chunk',
                    content: { type: 'image', data: block.data, mimeType: block.mediaType },
                    messageId: id,
                  },
                ]
              : [],
        )
      }
      case 'assistant/message': {
        const id = messageId(event.data.turn, event.data.step)
        const out: SessionUpdate[] = []
        for (const block of event.data.message.content) {
          // Live, what already streamed as deltas is not sent twice; an adapter that streamed nothing still shows.
          if (block.type === 'reasoning' && block.text && (replay || !this.streamedReasoning)) {
            out.push({
              sessionUpdate: 'agent_thought_chunk',
              content: { type: 'text', text: block.text },
              messageId: id,
            })
          } else if (block.type === 'text' && block.text && (replay || !this.streamedText)) {
            out.push({
              sessionUpdate: 'agent_message_chunk',
              content: { type: 'text', text: block.text },
              messageId: id,
            })
          }
        }
        return out
      }
      case 'tool/call': {
        const view = this.options.present(event.data.name, event.data.arguments)
        this.open.set(event.data.callId, { view })
        const locations = this.locations(view)
        return [
          {
            sessionUpdate: 'tool_call',
            toolCallId: event.data.callId,
            title: view.title,
            kind: view.kind,
            status: 'in_progress',
            rawInput: view.rawInput,
            ...(locations.length ? { locations } : {}),
          },
        ]
      }
      case 'tool/result': {
        this.open.delete(event.data.callId)
        const content = toolContent(event.data.content)
        // The diff comes from the result's details; a result logged before they existed is shown as its text.
        const details = event.data.details
        if (!event.data.isError && details?.kind === 'diff')
          content.unshift({ type: 'diff', ...diffFromDetails(details, this.options.cwd) })
        return [
          {
            sessionUpdate: 'tool_call_update',
            toolCallId: event.data.callId,
            // Failed is resultStatus's word (a non-zero exit too); ACP has no "cancelled" status for a call.
            status: resultStatus(event.data) === 'ok' ? 'completed' : 'failed',
            content,
          },
        ]
      }
      case 'permission/request': {
        // Live only: a replay shows each call's final state.
        const call = this.open.get(event.data.callId)
        if (!call || replay) return []
        call.asked = true
        return [{ sessionUpdate: 'tool_call_update', toolCallId: event.data.callId, status: 'pending' }]
      }
      case 'permission/decision': {
        // An allowed call that waited for approval runs now; a denied one ends with its failed result next.
        const call = this.open.get(event.data.callId)
        if (!call?.asked || replay || event.data.decision !== 'allow') return []
        return [{ sessionUpdate: 'tool_call_update', toolCallId: event.data.callId, status: 'in_progress' }]
      }
      default:
        return []
    }
  }

  /** How a call still open in this session was presented (for a permission request about it). */
  openCall(callId: string): { view: ToolCallView; diff?: FileDiff } | undefined {
    const call = this.open.get(callId)
    if (!call) return undefined
    const diff = call.view.kind === 'edit' ? diffOfEditArgs(call.view.rawInput, this.options.cwd) : undefined
    return { view: call.view, ...(diff ? { diff } : {}) }
  }

  private locations(view: ToolCallView): ToolCallLocation[] {
    return (view.locations ?? []).map((location) => ({
      path: resolve(this.options.cwd, location.path),
      ...(location.line !== undefined ? { line: location.line } : {}),
    }))
  }
}
