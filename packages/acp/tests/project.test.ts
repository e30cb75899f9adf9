import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '@keel/session'
import type { ToolCallView } from '@keel/tools'
import { callOfData, diffFromArgs, diffFromData } from '../src/diff.ts'
import { planUpdate, stopReasonOf, UpdateProjector } from '../src/project.ts'
import { promptContent } from '../src/prompt.ts'

let seq = 0
function event(type: string, data: unknown): SessionEvent {
  return { type, seq: seq++, time: 0, data } as unknown as SessionEvent
}

const editView = (rawInput: unknown): ToolCallView => ({
  title: 'Edit a.ts',
  kind: 'edit',
  rawInput,
  locations: [{ path: 'src/a.ts', line: 3 }],
})

describe('stop reasons and plans', () => {
  it('maps every turn ending: error has no stop reason (the request fails instead)', () => {
    expect(stopReasonOf('completed')).toBe('end_turn')
    expect(stopReasonOf('aborted')).toBe('cancelled')
    expect(stopReasonOf('step-limit')).toBe('max_turn_requests')
    expect(stopReasonOf('max-tokens')).toBe('max_tokens')
    expect(stopReasonOf('error')).toBeUndefined()
    expect(stopReasonOf('interrupted')).toBeUndefined()
  })

  it('sends the whole list with status 1:1 and a constant priority; no plan is an empty list', () => {
    expect(
      planUpdate([
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'in_progress' },
        { content: 'c', status: 'pending' },
      ]),
    ).toEqual({
      sessionUpdate: 'plan',
      entries: [
        { content: 'a', status: 'completed', priority: 'medium' },
        { content: 'b', status: 'in_progress', priority: 'medium' },
        { content: 'c', status: 'pending', priority: 'medium' },
      ],
    })
    expect(planUpdate(null)).toEqual({ sessionUpdate: 'plan', entries: [] })
  })
})

describe('UpdateProjector', () => {
  it('live, sends assistant text only once: from deltas when they streamed, from the message when they did not', () => {
    const projector = new UpdateProjector({ cwd: '/w', present: () => ({ title: 't', kind: 'other', rawInput: {} }) })
    projector.event(event('turn/start', { turn: 1 }), false)
    projector.event(event('step/start', { turn: 1, step: 1 }), false)
    expect(projector.delta({ kind: 'text', text: 'Hi' })).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Hi' }, messageId: 'turn-1-step-1' },
    ])
    const message = {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'hmm' },
        { type: 'text', text: 'Hi' },
      ],
    }
    expect(projector.event(event('assistant/message', { turn: 1, step: 1, message }), false)).toEqual([
      { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'hmm' }, messageId: 'turn-1-step-1' },
    ])
    projector.event(event('step/start', { turn: 1, step: 2 }), false)
    expect(
      projector.event(
        event('assistant/message', {
          turn: 1,
          step: 2,
          message: { role: 'assistant', content: [{ type: 'text', text: 'Bye' }] },
        }),
        false,
      ),
    ).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Bye' }, messageId: 'turn-1-step-2' },
    ])
    expect(
      projector.event(
        event('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'q' }] } }),
        false,
      ),
    ).toEqual([])
    expect(projector.delta({ kind: 'tool-output', callId: 'c', text: 'out' })).toEqual([])
  })

  it('replays user prompts but not harness-made user messages (compaction summaries)', () => {
    const projector = new UpdateProjector({ cwd: '/w', present: () => ({ title: 't', kind: 'other', rawInput: {} }) })
    projector.event(event('turn/start', { turn: 2 }), true)
    expect(
      projector.event(
        event('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'q' }] } }),
        true,
      ),
    ).toEqual([{ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'q' }, messageId: 'turn-2-user' }])
    expect(
      projector.event(
        event('user/message', {
          message: { role: 'user', source: 'compaction', content: [{ type: 'text', text: 'summary' }] },
        }),
        true,
      ),
    ).toEqual([])
  })

  it('gives an edit call absolute locations and, when it succeeds, a diff: the logged one first, else from its arguments', () => {
    const args = { path: 'src/a.ts', old_string: 'let a = 1', new_string: 'const a = 1' }
    const projector = new UpdateProjector({ cwd: '/w', present: () => editView(args) })
    const [call] = projector.event(
      event('tool/call', { turn: 1, step: 1, callId: 'e1', name: 'edit', arguments: JSON.stringify(args) }),
      false,
    )
    expect(call).toMatchObject({
      sessionUpdate: 'tool_call',
      toolCallId: 'e1',
      kind: 'edit',
      status: 'in_progress',
      locations: [{ path: '/w/src/a.ts', line: 3 }],
    })
    const ok = [{ type: 'text', text: 'Edited src/a.ts' }]
    const [fromArgs] = projector.event(
      event('tool/result', { turn: 1, step: 1, callId: 'e1', content: ok, isError: false }),
      false,
    )
    expect(fromArgs).toEqual({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'e1',
      status: 'completed',
      content: [
        { type: 'diff', path: '/w/src/a.ts', oldText: 'let a = 1', newText: 'const a = 1' },
        { type: 'content', content: { type: 'text', text: 'Edited src/a.ts' } },
      ],
    })

    projector.event(event('tool/call', { turn: 1, step: 1, callId: 'e2', name: 'edit', arguments: '{}' }), false)
    projector.event(
      event('fs/edit', { callId: 'e2', path: 'src/a.ts', oldText: 'whole old file', newText: 'whole new file' }),
      false,
    )
    const [logged] = projector.event(
      event('tool/result', { turn: 1, step: 1, callId: 'e2', content: ok, isError: false }),
      false,
    )
    expect(logged).toMatchObject({
      content: [
        { type: 'diff', path: '/w/src/a.ts', oldText: 'whole old file', newText: 'whole new file' },
        { type: 'content' },
      ],
    })

    projector.event(event('tool/call', { turn: 1, step: 1, callId: 'e3', name: 'edit', arguments: '{}' }), false)
    const [failed] = projector.event(
      event('tool/result', {
        turn: 1,
        step: 1,
        callId: 'e3',
        content: [{ type: 'text', text: 'Error: no match' }],
        isError: true,
      }),
      false,
    )
    expect(failed).toEqual({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'e3',
      status: 'failed',
      content: [{ type: 'content', content: { type: 'text', text: 'Error: no match' } }],
    })
  })

  it('passes images in tool results through as image content', () => {
    const projector = new UpdateProjector({
      cwd: '/w',
      present: () => ({ title: 'shot', kind: 'other', rawInput: {} }),
    })
    projector.event(event('tool/call', { turn: 1, step: 1, callId: 'i', name: 'shot', arguments: '{}' }), false)
    const [update] = projector.event(
      event('tool/result', {
        turn: 1,
        step: 1,
        callId: 'i',
        content: [{ type: 'image', mediaType: 'image/png', data: 'AAAA' }],
        isError: false,
      }),
      false,
    )
    expect(update).toMatchObject({
      content: [{ type: 'content', content: { type: 'image', mimeType: 'image/png', data: 'AAAA' } }],
    })
  })
})

describe('diffs, defensively', () => {
  it('accepts { path, newText, oldText? } as data or under diff, and nothing else', () => {
    expect(diffFromData({ path: 'a', newText: 'n' }, '/w')).toEqual({ path: '/w/a', oldText: null, newText: 'n' })
    expect(diffFromData({ diff: { path: '/abs/a', oldText: 'o', newText: 'n' } }, '/w')).toEqual({
      path: '/abs/a',
      oldText: 'o',
      newText: 'n',
    })
    expect(diffFromData({ path: 'a' }, '/w')).toBeUndefined()
    expect(diffFromData({ path: '', newText: 'n' }, '/w')).toBeUndefined()
    expect(diffFromData('diff', '/w')).toBeUndefined()
    expect(diffFromData(null, '/w')).toBeUndefined()
  })

  it('reads search-and-replace arguments, but never invents the old side of a whole-file write', () => {
    expect(diffFromArgs({ file_path: 'b', oldText: '', newText: 'x' }, '/w')).toEqual({
      path: '/w/b',
      oldText: '',
      newText: 'x',
    })
    expect(diffFromArgs({ path: 'b', content: 'x' }, '/w')).toBeUndefined()
    expect(diffFromArgs([1], '/w')).toBeUndefined()
  })

  it('attributes a logged diff to the call it names, or to the only open call', () => {
    expect(callOfData({ callId: 'a' }, ['a', 'b'])).toBe('a')
    expect(callOfData({ callId: 'z' }, ['a'])).toBeUndefined()
    expect(callOfData({}, ['a'])).toBe('a')
    expect(callOfData({}, ['a', 'b'])).toBeUndefined()
  })
})

describe('promptContent', () => {
  it('keeps text and renders resource links so the model can open them', () => {
    expect(
      promptContent([
        { type: 'text', text: 'Look at' },
        { type: 'resource_link', name: 'a.ts', uri: 'file:///repo/src/a.ts' },
        { type: 'resource_link', name: 'Spec', uri: 'https://example.com/spec', title: 'The spec' },
      ]),
    ).toEqual({
      content: [
        { type: 'text', text: 'Look at' },
        { type: 'text', text: '[Referenced file: /repo/src/a.ts]' },
        { type: 'text', text: '[Referenced resource: https://example.com/spec (The spec)]' },
      ],
    })
  })

  it('refuses kinds it did not advertise, and empty prompts', () => {
    expect(promptContent([{ type: 'audio', data: 'AA', mimeType: 'audio/wav' }])).toEqual({
      error: expect.stringContaining('prompt[0]: audio content is not accepted'),
    })
    expect(promptContent([{ type: 'resource', resource: { uri: 'file:///a', text: 'x' } }])).toHaveProperty('error')
    expect(promptContent([])).toEqual({ error: 'the prompt is empty' })
  })
})
