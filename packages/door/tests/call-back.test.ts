import { expect, test } from 'vitest'
import { callBackHow, callBackWords, terminalCallBack } from '../src/call-back.ts'

test('when to call back: off never; by default only while unfocused; always when asked', () => {
  expect(callBackHow({}, false)).toBe('bell')
  expect(callBackHow({}, true)).toBeUndefined()
  // A terminal that never reported focus counts as looked at: no noise by default.
  expect(callBackHow({}, undefined)).toBeUndefined()
  expect(callBackHow({ notify: 'desktop' }, false)).toBe('desktop')
  expect(callBackHow({ notify: 'off', notifyWhen: 'always' }, false)).toBeUndefined()
  expect(callBackHow({ notify: 'desktop', notifyWhen: 'always' }, true)).toBe('desktop')
})

test('the words, and the terminal bytes: BEL, OSC 9 and OSC 777, nothing in them can end the sequence', () => {
  const approval = callBackWords({ kind: 'approval', sessionId: 's', summary: 'bash: rm -rf build' })
  expect(approval).toEqual({ title: 'Keel needs your approval', body: 'bash: rm -rf build' })
  expect(callBackWords({ kind: 'turn-end', sessionId: 's', reason: 'completed' }).title).toBe('Keel is done')
  expect(terminalCallBack('bell', approval)).toBe('\u0007')
  expect(terminalCallBack('desktop', approval)).toBe(
    '\u001b]9;Keel needs your approval: bash: rm -rf build\u0007\u001b]777;notify;Keel needs your approval;bash: rm -rf build\u0007\u0007',
  )
  const hostile = terminalCallBack('desktop', { title: 'x', body: 'a\u0007b\u001b]52;c;zz;d\u009c' })
  expect(hostile).toBe('\u001b]9;x: a b ]52 c zz d \u0007\u001b]777;notify;x;a b ]52 c zz d \u0007\u0007')
})
