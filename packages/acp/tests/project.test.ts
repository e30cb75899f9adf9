import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '@keel/session'
import type { ToolCallView } from '@keel/tools'
import { diffFromDetails, diffOfEditArgs } from '../src/diff.ts'
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

  it('gives an edit call absolute locations and, when it succeeds, the diff from its result details', () => {
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
    const details = {
      kind: 'diff',
      path: 'src/a.ts',
      created: false,
      added: 1,
      removed: 1,
      omitted: 0,
      hunks: [
        { oldStart: 2, oldLines: 3, newStart: 2, newLines: 3, lines: [' x', '-let a = 1', '+const a = 1', ' y'] },
      ],
    }
    const [done] = projector.event(
      event('tool/result', { turn: 1, step: 1, callId: 'e1', content: ok, isError: false, details }),
      false,
    )
    expect(done).toEqual({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'e1',
      status: 'completed',
      content: [
        { type: 'diff', path: '/w/src/a.ts', oldText: 'x\nlet a = 1\ny', newText: 'x\nconst a = 1\ny' },
        { type: 'content', content: { type: 'text', text: 'Edited src/a.ts' } },
      ],
    })

    // A result logged before results carried details (an older session): its text alone, no diff guessed.
    projector.event(event('tool/call', { turn: 1, step: 1, callId: 'e2', name: 'edit', arguments: '{}' }), false)
    const [old] = projector.event(
      event('tool/result', { turn: 1, step: 1, callId: 'e2', content: ok, isError: false }),
      false,
    )
    expect(old).toMatchObject({ content: [{ type: 'content', content: { type: 'text', text: 'Edited src/a.ts' } }] })

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

    // A command that exited non-zero is a failure too (resultStatus), though its result is no error for the model.
    projector.event(event('tool/call', { turn: 1, step: 1, callId: 'b1', name: 'bash', arguments: '{}' }), false)
    const [exited] = projector.event(
      event('tool/result', {
        turn: 1,
        step: 1,
        callId: 'b1',
        content: [{ type: 'text', text: 'building\n[exit code 3 · 0.1 s]' }],
        isError: false,
        details: { kind: 'command', exit: { kind: 'exited', code: 3 } },
      }),
      false,
    )
    expect(exited).toMatchObject({ toolCallId: 'b1', status: 'failed' })
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

describe('diffs', () => {
  it('a created file has no old side; each side is its hunk lines, hunk after hunk', () => {
    const hunks = [
      { oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ['-a', '+b'] },
      { oldStart: 9, oldLines: 2, newStart: 9, newLines: 1, lines: [' c', '-d', '\\ No newline at end of file'] },
    ]
    const base = { kind: 'diff' as const, path: '/abs/f', added: 1, removed: 2, omitted: 0, hunks }
    expect(diffFromDetails({ ...base, created: false }, '/w')).toEqual({
      path: '/abs/f',
      oldText: 'a\nc\nd',
      newText: 'b\nc',
    })
    const created = {
      ...base,
      created: true,
      hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 1, lines: ['+n'] }],
    }
    expect(diffFromDetails(created, '/w')).toEqual({ path: '/abs/f', oldText: null, newText: 'n' })
  })

  it("a pending edit's own arguments are its diff; a whole-file write's old side is never invented", () => {
    expect(diffOfEditArgs({ path: 'b', old_string: '', new_string: 'x' }, '/w')).toEqual({
      path: '/w/b',
      oldText: '',
      newText: 'x',
    })
    expect(diffOfEditArgs({ path: 'b', content: 'x' }, '/w')).toBeUndefined()
    expect(diffOfEditArgs({ file_path: 'b', oldText: 'a', newText: 'x' }, '/w')).toBeUndefined()
    expect(diffOfEditArgs([1], '/w')).toBeUndefined()
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
