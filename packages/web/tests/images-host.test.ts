// session.prompt's images through the host: checked by their bytes, at most four, and refused in one line for a
// model without vision (nothing logged); a vision model's turn gets them.
import { afterEach, expect, test } from 'vitest'
import { hostFixture, waitFor, type HostFixture } from './host-support.ts'

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
let f: HostFixture | undefined
afterEach(async () => {
  await f?.dispose()
  f = undefined
})

test('a model without vision refuses; bad images are one line each; a vision model is sent them', async () => {
  f = await hostFixture([{ text: 'a red pixel' }])
  const { session } = await f.ok('session.create', {})
  const images = [{ name: 'shot.png', data: PNG }]
  expect(await f.rpc('session.prompt', { sessionId: session.id, text: 'look', images })).toMatchObject({
    ok: false,
    error: {
      code: 'bad-request',
      message:
        'scripted/script is not known to take images (the model catalog), so nothing was sent; use a vision model, or set "vision": true for it under "models" in settings',
    },
  })
  expect(f.k.model.requests).toEqual([])
  expect(
    await f.rpc('session.prompt', {
      sessionId: session.id,
      text: 'look',
      images: [{ name: 'x.png', data: btoa('text') }],
    }),
  ).toMatchObject({
    ok: false,
    error: { message: 'x.png is not a PNG, JPEG, GIF or WebP image' },
  })
  expect(
    await f.rpc('session.prompt', { sessionId: session.id, text: 'look', images: Array(5).fill(images[0]) }),
  ).toMatchObject({ ok: false, error: { message: 'a prompt takes at most 4 images, got 5' } })

  f.k.model.script.vision = true
  await f.ok('session.prompt', { sessionId: session.id, text: 'look', images })
  await waitFor(() => f!.k.model.requests.length > 0, 'the request')
  expect(f.k.model.requests[0]!.messages[0]!.content).toEqual([
    { type: 'text', text: 'look' },
    { type: 'image', mediaType: 'image/png', data: PNG, name: 'shot.png' },
  ])
})
