// Where a session's private temp folder goes: never under /dev, which the sandbox replaces with a fresh one.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { SessionTemps, tempBase } from '../src/temp.ts'

const saved = process.env.TMPDIR
afterEach(() => {
  if (saved === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = saved
})

describe("a session's temp folder", () => {
  test('lies in the system temp dir when that is outside /dev', () => {
    const disk = mkdtempSync(join(tmpdir(), 'keel-temp-base-'))
    try {
      process.env.TMPDIR = disk
      expect(tempBase()).toBe(disk)
      const temps = new SessionTemps()
      const dir = temps.of('s1')
      expect(dir.startsWith(`${disk}/keel-session-`)).toBe(true)
      expect(temps.of('s1')).toBe(dir)
      temps.clear()
      expect(existsSync(dir)).toBe(false)
    } finally {
      rmSync(disk, { recursive: true, force: true })
    }
  })

  test.skipIf(!existsSync('/dev/shm'))('moves out of /dev when the system temp dir is there', () => {
    const memory = mkdtempSync('/dev/shm/keel-temp-base-')
    try {
      process.env.TMPDIR = memory
      const base = tempBase()
      expect(base).not.toMatch(/^\/dev(\/|$)/)
      const temps = new SessionTemps()
      expect(temps.of('s1')).not.toMatch(/^\/dev\//)
      temps.clear()
    } finally {
      rmSync(memory, { recursive: true, force: true })
    }
  })
})
