import { expect, test } from 'vitest'
import { browserBundle } from '../../../test-support/browser-bundle.ts'

// Vite only warns when browser code reaches a Node built-in (it stubs the module), so the page would break at run
// time; this bundles the client for the browser the strict way and fails instead.
test('the web client bundles for the browser, taking from other Keel packages only their browser-safe entries', async () => {
  const bundle = await browserBundle('./packages/web/src/client/main.tsx')
  expect(bundle.errors).toEqual([])
  const keel = bundle.inputs.filter((file) => file.startsWith('packages/') && !file.startsWith('packages/web/'))
  expect(keel.sort()).toEqual([
    'packages/door/src/call-back.ts',
    'packages/door/src/shell-message.ts',
    'packages/door/src/transcript.ts',
    'packages/door/src/words.ts',
    'packages/llm/src/retry-text.ts',
    'packages/permissions/src/decisions.ts',
    'packages/permissions/src/render.ts',
    'packages/permissions/src/types.ts',
    'packages/session/src/cost.ts',
    'packages/session/src/escape.ts',
    'packages/session/src/image.ts',
    'packages/session/src/outcome.ts',
    'packages/session/src/text.ts',
    'packages/subagent/src/plans.ts',
    'packages/subagent/src/projection.ts',
    'packages/subagent/src/types.ts',
    'packages/todo/src/edit.ts',
    'packages/todo/src/items.ts',
    'packages/todo/src/plan.ts',
    'packages/todo/src/proposal.ts',
    'packages/todo/src/types.ts',
  ])
})
