// One channel for what a plugin has to tell the person outside the conversation: an MCP server down, checkpoints
// off, why the sandbox is off, a rule that could not be saved, a retry. A plugin emits `keel/notice`; every door
// listens to it alone and shows it its own way (print mode and `keel serve` on stderr, the TUI as a note, the web
// page as a banner, ACP as a notice update), so a new notice reaches every door without a door changing.
import type { Context } from 'cordis'

/** Who has something to say (a door may label by it). */
export type NoticeSource = 'mcp' | 'checkpoint' | 'sandbox' | 'permissions' | 'trust' | 'retry' | 'model' | 'extend'

export interface Notice {
  source: NoticeSource
  /** One line, raw: a door escapes it on its way out. */
  text: string
  level: 'info' | 'warn' | 'error'
}

declare module 'cordis' {
  interface Events {
    /**
     * One line for the person from a plugin (an MCP server failed, checkpoints are off, the sandbox is off). Every
     * front door shows it; nothing waits for it.
     * @mode emit
     */
    'keel/notice'(notice: Notice): void
  }
}

/** Emits a notice on `ctx`'s app: the one way a plugin tells the person something. */
export function notify(ctx: Context, source: NoticeSource, text: string, level: Notice['level'] = 'warn'): void {
  ctx.emit('keel/notice', { source, text, level })
}

/** Notices a door that starts late (after the boot) still sees. */
const KEPT = 20
const kept = new WeakMap<object, Notice[]>()

/** Keeps the app's latest notices, from the boot on (the session plugin calls it first), for `onNotice`. */
export function keepNotices(ctx: Context): void {
  const list: Notice[] = []
  kept.set(ctx.root, list)
  ctx.on('keel/notice', (notice) => {
    list.push(notice)
    if (list.length > KEPT) list.shift()
  })
}

/**
 * How a door listens: the notices so far (an MCP server that failed while the plugins booted, before the door
 * started), then each new one. Returns the disposer.
 */
export function onNotice(ctx: Context, listener: (notice: Notice) => void): () => void {
  for (const notice of kept.get(ctx.root) ?? []) listener(notice)
  return ctx.on('keel/notice', listener)
}
