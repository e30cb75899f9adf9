import { defineConfig } from 'vitest/config'

// `npm run test:unit` (KEEL_TESTS=unit): every tier but the ones that drive tmux, Chromium or the OS sandbox. Their
// files are named for it; a mixed file's own sandbox tests skip there (test-support/system-tools.ts).
const UNIT = process.env.KEEL_TESTS === 'unit'
const SYSTEM_TIERS = [
  'packages/tui/tests/*e2e.test.ts',
  'packages/web/tests/browser*.test.ts',
  'packages/sandbox/tests/**',
  'packages/permissions/tests/demo.test.ts',
  'scripts/tests/install.test.ts',
]

export default defineConfig({
  test: {
    include: ['packages/*/tests/**/*.test.ts', 'packages/*/tests/**/*.test.tsx', 'scripts/tests/**/*.test.ts'],
    exclude: ['**/node_modules/**', ...(UNIT ? SYSTEM_TIERS : [])],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Vitest's default is one worker per core less one: a single worker on a 2-core machine. Most test time here is
    // spent waiting on child processes (keel, tmux, Chromium, git, MCP servers), so three files at once keep both
    // cores busy and bring the suite well under its 5-minute budget.
    maxWorkers: 3,
    globalSetup: ['test-support/global-setup.ts'],
  },
})
