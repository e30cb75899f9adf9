// The browser-safe part of @keel/subagent (the `@keel/subagent/plans` entry): the delegated-task plan's shape, the
// status rule and the `subagentPlans` fold. It imports only types from other packages, so the web client bundles it
// (tests/browser-safe.test.ts checks); the TUI and the web host take the same module through `@keel/subagent`.
export * from './types.ts'
export * from './projection.ts'
