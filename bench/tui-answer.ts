/** A model turn's answer in the TUI benches: a few paragraphs; every tenth holds a fenced block the highlighter colours. */
export const answer = (turn: number): string =>
  `Turn ${turn}: the **change** is in \`src/app.ts\`.\n\n- one point\n- another point\n\n${'More words in the answer. '.repeat(12)}` +
  (turn % 10 === 0 ? '\n\n```ts\nexport function f(x: number): number {\n  return x * 2\n}\n```' : '')
