import { describe, expect, it } from 'vitest'
import { escapeControls, escapeLine } from '@keel/session'

describe('escapeControls / escapeLine', () => {
  it('shows C0, DEL and C1 controls (OSC 52, CSI) instead of sending them to the terminal', () => {
    expect(escapeControls('a\u001b]52;c;cHduZWQ=\u0007b')).toBe('a\u241b]52;c;cHduZWQ=\u2407b')
    expect(escapeControls('x\u009b31my\u007f')).toBe('x\\x9b31my\u2421')
    expect(escapeControls('keeps\nlines\tand tabs')).toBe('keeps\nlines\tand tabs')
    expect(escapeLine('one\nline\r\n\tonly')).toBe('one line only')
  })

  it('shows bidi overrides and isolates visibly (Trojan Source), in both helpers', () => {
    const trojan = 'access = "user\u202e \u2066// admin\u2069\u2066"'
    expect(escapeControls(trojan)).toBe('access = "user<U+202E> <U+2066>// admin<U+2069><U+2066>"')
    for (const code of [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]) {
      const char = String.fromCodePoint(code)
      expect(escapeLine(`a${char}b`)).toBe(`a<U+${code.toString(16).toUpperCase()}>b`)
    }
  })

  it('shows zero-width and other invisible format characters, and line/paragraph separators', () => {
    const hidden = [
      0x200b, 0x200c, 0x200e, 0x200f, 0x2060, 0x2061, 0xfeff, 0x00ad, 0x061c, 0x180e, 0xe0041, 0x2028, 0x2029,
    ]
    for (const code of hidden) {
      const char = String.fromCodePoint(code)
      expect(escapeControls(`a${char}b`), code.toString(16)).toBe(
        `a<U+${code.toString(16).toUpperCase().padStart(4, '0')}>b`,
      )
    }
    // Tag characters can smuggle a whole hidden sentence; every one of them shows.
    const smuggled = [...'hi'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('')
    expect(escapeLine(`ok${smuggled}`)).toBe('ok<U+E0068><U+E0069>')
    // A lone zero-width joiner is shown; one that joins an emoji sequence is kept, so emoji still render.
    expect(escapeControls('a\u200db')).toBe('a<U+200D>b')
    for (const emoji of ['👨\u200d👩\u200d👧', '❤\ufe0f\u200d🔥', '👩🏽\u200d💻', '🏳\ufe0f\u200d🌈'])
      expect(escapeControls(emoji)).toBe(emoji)
    expect(escapeControls('👨\u200d')).toBe('👨<U+200D>')
  })

  it('leaves ordinary text of every script alone and is idempotent', () => {
    const text = 'naïve café — 日本語 🚀 עברית العربية ✓ ◐'
    expect(escapeControls(text)).toBe(text)
    const once = escapeLine('x\u202e\u001b[2Jy\u200b')
    expect(escapeLine(once)).toBe(once)
  })
})
