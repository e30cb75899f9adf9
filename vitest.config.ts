import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/tests/**/*.test.ts', 'packages/*/tests/**/*.test.tsx', 'scripts/tests/**/*.test.ts'],
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
