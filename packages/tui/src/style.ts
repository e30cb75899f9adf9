// SGR styling. Our own escape codes only ever wrap text that was escaped first (see safe.ts).

const sgr = (open: string, close: string) => (text: string) => (text ? `\x1b[${open}m${text}\x1b[${close}m` : text)

export const style = {
  bold: sgr('1', '22'),
  dim: sgr('2', '22'),
  italic: sgr('3', '23'),
  underline: sgr('4', '24'),
  strike: sgr('9', '29'),
  red: sgr('31', '39'),
  green: sgr('32', '39'),
  yellow: sgr('33', '39'),
  blue: sgr('34', '39'),
  magenta: sgr('35', '39'),
  cyan: sgr('36', '39'),
  gray: sgr('90', '39'),
  inverse: sgr('7', '27'),
}

export type Styler = (text: string) => string
