import { truncateToWidth, type Component } from '@mariozechner/pi-tui'
import type { QueuedPrompt } from '@keel/agent'
import { queuedLabel } from '@keel/door/words'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'

/**
 * Under the editor: the agent's queued prompts (its PromptQueue, shown through `agent/queue`) until each is
 * delivered, with how to take the last one back.
 */
export class QueueView implements Component {
  items: readonly QueuedPrompt[] = []

  invalidate(): void {}

  render(width: number): string[] {
    if (!this.items.length) return []
    const lines = this.items.map((item) => {
      const text = item.content.map((block) => (block.type === 'text' ? block.text : '[image]')).join('')
      const mark = item.kind === 'steer' ? '↳' : '⏭'
      return `${style.dim(`  ${mark} ${queuedLabel(item.kind)}:`)} ${escapeLine(text)}`
    })
    lines.push(style.dim('    alt+↑ takes the last one back to edit · esc cancels the turn, the queue stays'))
    return lines.map((line) => truncateToWidth(guardLine(line), Math.max(1, width), '…'))
  }
}
