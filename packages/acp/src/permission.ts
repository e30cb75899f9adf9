import { resolve } from 'node:path'
import {
  methods,
  type PermissionOption,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type ToolCallContent,
} from '@agentclientprotocol/sdk'
import type { PermissionAnswer, PermissionAsk } from '@keel/permissions'
import type { ToolCallView } from '@keel/tools'
import type { FileDiff } from './diff.ts'

export const DENY_ONCE: PermissionAnswer = { decision: 'deny', scope: 'once' }

/**
 * Keel's answers as ACP permission options (the option id names the answer). "Always" saves to the personal
 * `.keel/settings.local.json`; no rule is offered for a call no rule can cover.
 */
function permissionOptions(ask: PermissionAsk): PermissionOption[] {
  const rules = ask.suggestedRules.join(', ')
  return [
    { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
    ...(ask.sessionRules.length
      ? [
          {
            optionId: 'allow_session',
            name: `Allow ${ask.sessionRules.join(', ')} for this session`,
            kind: 'allow_always' as const,
          },
        ]
      : []),
    ...(rules ? [{ optionId: 'allow_always', name: `Always allow ${rules}`, kind: 'allow_always' as const }] : []),
    { optionId: 'reject_once', name: 'Deny', kind: 'reject_once' },
  ]
}

/**
 * The `session/request_permission` params for an ask. `call` is the call as the client already saw it (its
 * `tool_call`), when the asking session is the bridged one; a subagent's call was never shown, so the request
 * carries everything the client needs to show it: title, kind, raw input, and the detail (the command, the diff).
 */
export function permissionRequest(
  sessionId: string,
  ask: PermissionAsk,
  cwd: string,
  call?: { view: ToolCallView; diff?: FileDiff },
): RequestPermissionRequest {
  const content: ToolCallContent[] = []
  if (call?.diff) content.push({ type: 'diff', ...call.diff })
  else if (ask.detail) content.push({ type: 'content', content: { type: 'text', text: ask.detail } })
  const locations = (call?.view.locations ?? []).map((location) => ({
    path: resolve(cwd, location.path),
    ...(location.line !== undefined ? { line: location.line } : {}),
  }))
  return {
    sessionId,
    toolCall: {
      toolCallId: ask.callId,
      title: call?.view.title ?? ask.summary,
      kind: call?.view.kind ?? 'other',
      status: 'pending',
      ...(call ? { rawInput: call.view.rawInput } : {}),
      ...(content.length ? { content } : {}),
      ...(locations.length ? { locations } : {}),
    },
    options: permissionOptions(ask),
  }
}

/** The client's choice as Keel's answer; `cancelled` (or an option we did not offer) is a denial. */
export function answerOf(response: RequestPermissionResponse): PermissionAnswer {
  const outcome = response.outcome
  if (outcome.outcome !== 'selected') return DENY_ONCE
  switch (outcome.optionId) {
    case 'allow_once':
      return { decision: 'allow', scope: 'once' }
    case 'allow_session':
      return { decision: 'allow', scope: 'session' }
    case 'allow_always':
      return { decision: 'allow', scope: 'always' }
    default:
      return DENY_ONCE
  }
}

export const REQUEST_PERMISSION = methods.client.session.requestPermission

/**
 * A plan proposal as the ACP documents an agent leaving its plan mode: a `session/request_permission` for a
 * `switch_mode` tool call (agentclientprotocol.com/protocol/session-modes, "Exiting plan modes"), the plan as its
 * content. The options name what the person may answer: approve to run in ask or auto mode, or reject.
 */
export function proposalRequest(
  sessionId: string,
  proposal: { callId: string; plan: string; todos: readonly { content: string }[] },
): RequestPermissionRequest {
  const checklist = proposal.todos.map((todo, i) => `${i + 1}. ${todo.content}`).join('\n')
  return {
    sessionId,
    toolCall: {
      toolCallId: `${proposal.callId}:approve`,
      title: 'Approve the plan and leave plan mode',
      kind: 'switch_mode',
      status: 'pending',
      content: [{ type: 'content', content: { type: 'text', text: `${proposal.plan}\n\nChecklist:\n${checklist}` } }],
    },
    options: [
      { optionId: 'approve_ask', name: 'Approve: ask before changes', kind: 'allow_once' },
      { optionId: 'approve_auto', name: 'Approve: run in auto mode', kind: 'allow_always' },
      { optionId: 'reject', name: 'Reject: keep planning', kind: 'reject_once' },
    ],
  }
}

/** The client's answer to a proposal: the mode it approved in, or 'reject' (cancelled or unknown: reject). */
export function proposalAnswerOf(response: RequestPermissionResponse): 'ask' | 'auto' | 'reject' {
  const outcome = response.outcome
  if (outcome.outcome !== 'selected') return 'reject'
  return outcome.optionId === 'approve_ask' ? 'ask' : outcome.optionId === 'approve_auto' ? 'auto' : 'reject'
}
