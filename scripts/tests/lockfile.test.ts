// `npm install` on a clean clone must leave package-lock.json as committed. It rewrites the lock whenever a
// package.json declares dependencies the lock does not record (an edit made without running npm install), so check
// every workspace's declarations against the lock.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, test } from 'vitest'

const root = join(import.meta.dirname, '../..')
const FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'] as const

test('package-lock.json records exactly what every package.json declares', () => {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const folders = ['', ...readdirSync(join(root, 'packages')).map((name) => `packages/${name}`)]
  for (const folder of folders) {
    let manifest: Record<string, unknown>
    try {
      manifest = JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8'))
    } catch {
      continue
    }
    const locked = lock.packages[folder]
    expect(locked, `${folder || 'the root'} is missing from package-lock.json; run npm install`).toBeDefined()
    for (const field of FIELDS) {
      expect(
        locked[field] ?? {},
        `${folder || 'root'}/package.json ${field} differ from package-lock.json; run npm install and commit the lock`,
      ).toEqual(manifest[field] ?? {})
    }
  }
})
