// Model text as terminal lines, through pi-tui's Markdown component (marked underneath): headings, emphasis, lists,
// tables, block quotes, code spans, and fenced code highlighted by ./highlight.ts. The text is escaped before it is
// parsed and every rendered line is guarded after, so nothing the model writes (ESC, OSC, an entity that decodes to
// a control) reaches the terminal raw; raw HTML is shown as the text it is.
import { getCapabilities, Markdown, setCapabilities } from '@mariozechner/pi-tui'
import { escapeControls, guardLine } from './safe.ts'
import { markdownTheme } from './theme.ts'

// Links are shown, never made clickable: an OSC 8 hyperlink would hide where `[docs](https://…)` really goes, and
// the guard shows OSC as symbols anyway. Without it pi-tui prints the URL after the link text.
setCapabilities({ ...getCapabilities(), hyperlinks: false })

/** `text` rendered for a `width`-column terminal, `indent` columns in, trailing spaces trimmed. */
export function renderMarkdown(text: string, width: number, indent = 2): string[] {
  const markdown = new Markdown(escapeControls(text), indent, 0, markdownTheme)
  return markdown.render(width).map((line) => guardLine(line.replace(/\s+$/, '')))
}
