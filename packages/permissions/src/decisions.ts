// The browser-safe part of @keel/permissions (the `@keel/permissions/decisions` entry): the modes, the shapes of
// asks and decisions, and the one wording of a decision. It imports only types from other packages, so the web client
// bundles it (tests/browser-safe.test.ts checks); the TUI and `keel sessions show` take the same through the main entry.
export * from './types.ts'
export { describeDecision, describeModeChange } from './render.ts'
