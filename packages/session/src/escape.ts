// Untrusted text (model output, tool output, todo content) must never drive a terminal: ESC, OSC, C0 and C1 controls
// become visible symbols. Every surface that prints log content goes through here.

const C0 = /[\u0000-\u0008\u000b-\u001f\u007f]/g
const C1 = /[\u0080-\u009f]/g

function picture(char: string): string {
  const code = char.charCodeAt(0)
  if (code === 0x7f) return '\u2421'
  return String.fromCharCode(0x2400 + code)
}

/** Keeps newlines and tabs; every other control character is shown, not obeyed. */
export function escapeControls(text: string): string {
  return text.replace(C0, picture).replace(C1, (char) => `\\x${char.charCodeAt(0).toString(16)}`)
}

/** For one-line slots (todo items, titles): newlines and tabs become spaces as well. */
export function escapeLine(text: string): string {
  return escapeControls(text.replace(/[\r\n\t]+/g, ' '))
}
