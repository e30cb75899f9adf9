// The shipped composition (packages/cli/keel.yml) as data, so the default boot needs neither a YAML parser nor the
// cordis Loader. tests/composition.test.ts keeps it equal to the file, entry by entry, and checks that both boots give
// the same tools, schemas and system prompt.
import type { EntryOptions } from '@cordisjs/loader'
import { shipped } from './root.ts'

export const DEFAULT_COMPOSITION = shipped('packages/cli/keel.yml')

export const SHIPPED_COMPOSITION: readonly EntryOptions[] = [
  { id: 'session', name: '@keel/session' },
  { id: 'llm', name: '@keel/llm', config: { retryAttempts: 6, retryBaseDelayMs: 500, idleTimeoutMs: 90000 } },
  { id: 'tools', name: '@keel/tools' },
  { id: 'agent', name: '@keel/agent', config: { maxSteps: 200 } },
  { id: 'sandbox', name: '@keel/sandbox', config: { allowedDomains: [] } },
  { id: 'permissions', name: '@keel/permissions', config: { allow: [], deny: [] } },
  { id: 'shell', name: '@keel/shell', config: { defaultTimeout: 120, maxTimeout: 600 } },
  { id: 'todo', name: '@keel/todo', config: { allowParallelInProgress: false } },
  { id: 'fs', name: '@keel/fs', config: { allowOutsideCwd: false } },
  {
    id: 'fetch',
    name: '@keel/fetch',
    config: { timeoutMs: 30000, maxBytes: 5242880, maxChars: 60000, maxRedirects: 5, privateHosts: [] },
  },
  { id: 'subagent', name: '@keel/subagent', config: { maxDepth: 1, maxConcurrent: 4 } },
  {
    id: 'compaction',
    name: '@keel/compaction',
    config: { auto: true, threshold: 0.8, contextWindow: 0, keepTurns: 2, maxSummaryTokens: 2000 },
  },
  {
    id: 'mcp',
    name: '@keel/mcp',
    config: { projectFile: true, startTimeoutMs: 30000, callTimeoutMs: 120000, maxResultChars: 25000 },
  },
  {
    id: 'checkpoint',
    name: '@keel/checkpoint',
    config: { enabled: true, maxFiles: 50000, maxBytes: 500000000, listSeconds: 10 },
  },
  { id: 'extend', name: '@keel/extend', config: { hookFiles: [] } },
]
