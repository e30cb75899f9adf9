// Untrusted text (model output, tool output, todo content, every field read from a log) must never drive a terminal:
// ESC, OSC, C0 and C1 controls become visible symbols. Every surface that prints log content goes through here.
//
// Invisible characters are shown too: bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069) can make a line read
// differently from what it holds ("Trojan Source"), and zero-width and other format characters (U+200B–U+200F,
// U+2060, U+FEFF, tag characters, …: the Unicode class Cf) can hide text. They become `<U+202E>`.

// One pass: C0 (but newline and tab), DEL and C1, every format character, and the line/paragraph separators.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\p{Cf}]/gu
// A zero-width joiner between two pictographs builds one emoji (👨‍👩‍👧, ❤️‍🔥): that one is kept.
const EMOJI_ZWJ = /^\p{Extended_Pictographic}[\u{FE0F}\u{1F3FB}-\u{1F3FF}]?$/u

function visible(char: string, offset: number, text: string): string {
  const code = char.codePointAt(0)!
  if (code < 0x20) return String.fromCharCode(0x2400 + code)
  if (code === 0x7f) return '\u2421'
  if (code <= 0x9f) return `\\x${code.toString(16)}`
  if (code === 0x200d && joinsEmoji(text, offset)) return char
  return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`
}

function joinsEmoji(text: string, offset: number): boolean {
  const after = text.codePointAt(offset + 1)
  if (after === undefined || !EMOJI_ZWJ.test(String.fromCodePoint(after))) return false
  // The pictograph before may carry a variation selector or a skin tone: look back at most two code points.
  const before = [...text.slice(Math.max(0, offset - 4), offset)]
  const last = before.slice(-2).join('')
  return EMOJI_ZWJ.test(last) || EMOJI_ZWJ.test(before.at(-1) ?? '')
}

/** Keeps newlines and tabs; every other control character and every invisible format character is shown, not obeyed. */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, visible)
}

/** For one-line slots (todo items, titles, ids, paths): newlines and tabs become spaces as well. */
export function escapeLine(text: string): string {
  return escapeControls(text.replace(/[\r\n\t]+/g, ' '))
}

const JSON_UNSAFE = /[\u007f-\u009f\u2028\u2029\p{Cf}]/gu

/**
 * JSON for a terminal: the same value as `JSON.stringify` (it parses back identically), with DEL, C1 controls and
 * invisible format characters written as `\uXXXX` escapes, which JSON.stringify leaves raw. C0 controls it escapes.
 */
export function terminalJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(JSON_UNSAFE, (char) => {
    let out = ''
    for (let i = 0; i < char.length; i++) out += `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`
    return out
  })
}
