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
const INCLUDE = ['packages/*/tests/**/*.test.ts', 'packages/*/tests/**/*.test.tsx', 'scripts/tests/**/*.test.ts']
const EXCLUDE = ['**/node_modules/**', ...(UNIT ? SYSTEM_TIERS : [])]
// Files that measure their own process (its peak RSS), or need a module state no other file has set (the TUI's
// highlighter not loaded yet, node:fs mocked under the settings module to count its reads), or put a program of their
// own on PATH that module state would keep for later files (the sandbox's `bwrap`), or see whether a module loaded
// (the shell parser), and so get a fresh one.
const OWN_PROCESS = [
  'packages/sandbox/tests/probe.test.ts',
  'packages/fs/tests/read-large.test.ts',
  'packages/tui/tests/window.test.ts',
  'packages/settings/tests/snapshot.test.ts',
  'packages/permissions/tests/project-rules.test.ts',
  'packages/shell/tests/parser-preload.test.ts',
]

// What both projects share; the global setup (one build) stays at the root, where it runs once. The module cache keeps
// each file's transform on disk (node_modules/.experimental-vitest-cache, keyed by its content): a run after the
// first spent about a tenth of its CPU transforming and importing the same TypeScript again.
const COMMON = {
  testTimeout: 30_000,
  hookTimeout: 30_000,
  pool: 'forks',
  experimental: { fsModuleCache: true },
} as const

export default defineConfig({
  test: {
    ...COMMON,
    // Vitest's default is one worker per core less one: a single worker on a 2-core machine. Most test time here is
    // spent waiting on child processes (keel, tmux, Chromium, git, MCP servers), so three files at once keep both
    // cores busy.
    maxWorkers: 3,
    globalSetup: ['test-support/global-setup.ts'],
    projects: [
      {
        test: {
          ...COMMON,
          name: 'shared',
          include: INCLUDE,
          exclude: [...EXCLUDE, ...OWN_PROCESS],
          // Each worker process runs file after file and keeps the modules it loaded: a fresh process per file
          // spent more CPU loading the same packages again (about 0.8 s a file, 170 files) than many files spend
          // testing. test-support/file-scope.ts restores process.env and the cwd after each file.
          isolate: false,
          setupFiles: ['test-support/file-scope.ts'],
        },
      },
      { test: { ...COMMON, name: 'own-process', include: OWN_PROCESS, exclude: EXCLUDE, isolate: true } },
    ],
  },
})
