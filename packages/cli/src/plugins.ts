// The plugins Keel ships, imported statically by name so a bundled binary needs no module resolution at run
// time. A composition may still name any other package or a path relative to itself.
export const BUILTIN_PLUGINS: Record<string, () => Promise<unknown>> = {
  '@keel/session': () => import('@keel/session'),
  '@keel/session/dev': () => import('@keel/session/dev'),
  '@keel/store-pg': () => import('@keel/store-pg'),
  '@keel/llm': () => import('@keel/llm'),
  '@keel/tools': () => import('@keel/tools'),
  '@keel/agent': () => import('@keel/agent'),
  '@keel/sandbox': () => import('@keel/sandbox'),
  '@keel/permissions': () => import('@keel/permissions'),
  '@keel/shell': () => import('@keel/shell'),
  '@keel/todo': () => import('@keel/todo'),
  '@keel/fs': () => import('@keel/fs'),
  '@keel/fetch': () => import('@keel/fetch'),
  '@keel/subagent': () => import('@keel/subagent'),
  '@keel/compaction': () => import('@keel/compaction'),
  '@keel/acp': () => import('@keel/acp'),
  '@keel/mcp': () => import('@keel/mcp'),
  '@keel/checkpoint': () => import('@keel/checkpoint'),
  '@keel/extend': () => import('@keel/extend'),
}
