import { describe, expect, test } from 'vitest'
import { failureLabel, resultStatus, stripTerminalCodes } from '@keel/session/text'

describe('stripTerminalCodes', () => {
  test('takes out CSI (7- and 8-bit), OSC (BEL or ST), DCS/APC strings and two-byte escapes; keeps the text', () => {
    expect(stripTerminalCodes('\x1b[31mred\x1b[0m \x1b[1;32;48;5;200mbold\x1b[m')).toBe('red bold')
    expect(stripTerminalCodes('\x1b]0;title\x07a\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\b')).toBe('alinkb')
    expect(stripTerminalCodes('\x1b[?25l\x1b[2K\x1b[1Gx\x9b31my\x9d2;t\x9cz')).toBe('xyz')
    expect(stripTerminalCodes('\x1bPq#0;2;0;0;0\x1b\\\x1b_apc\x1b\\\x1b(Bok\x1b=\x1b7')).toBe('ok')
    // What is not a sequence is left for the doors' escaping to show.
    expect(stripTerminalCodes('tab\tbell\x07 cr\r')).toBe('tab\tbell\x07 cr\r')
    expect(stripTerminalCodes('plain ✓ text')).toBe('plain ✓ text')
  })
})

describe('resultStatus', () => {
  test('an error, a non-zero exit, a timeout and a kill fail; exit 0 is ok; a cancel is a cancel', () => {
    const command = (exit: object, isError = false) => ({
      isError,
      details: { kind: 'command', exit } as never,
    })
    expect(resultStatus({ isError: false })).toBe('ok')
    expect(resultStatus({ isError: true })).toBe('failed')
    expect(resultStatus(command({ kind: 'exited', code: 0 }))).toBe('ok')
    expect(resultStatus(command({ kind: 'exited', code: 3 }))).toBe('failed')
    expect(resultStatus(command({ kind: 'timeout', seconds: 1 }, true))).toBe('failed')
    expect(resultStatus(command({ kind: 'killed', signal: 'SIGKILL' }))).toBe('failed')
    expect(resultStatus({ isError: true, details: { kind: 'cancelled' } })).toBe('cancelled')
    expect(failureLabel(command({ kind: 'exited', code: 3 }).details)).toBe('exit 3')
    expect(failureLabel(command({ kind: 'exited', code: 0 }).details)).toBeUndefined()
    expect(failureLabel(undefined)).toBeUndefined()
  })
})
