// A command's environment: credentials stay out, by their name or by a value that is a URL holding a password (the
// session store's connection string would let a command answer the agent's own approvals through the database).
import { describe, expect, test } from 'vitest'
import { commandEnv } from '../src/env.ts'

const NO_CONFIG = { passthrough: [], set: {} }

describe("a command's environment", () => {
  test('credentials by name and URLs with a password by value are dropped; the rest stays', () => {
    const env = commandEnv(
      NO_CONFIG,
      {},
      {
        PATH: '/usr/bin',
        OPENAI_API_KEY: 'sk-1',
        GITHUB_TOKEN: 'ghp',
        KEEL_STORE: 'postgres://keel@db/keel',
        DATABASE_URL: 'postgresql://app:hunter2@db:5432/app',
        HTTPS_PROXY: 'http://me:pw@proxy:3128',
        PLAIN_URL: 'https://example.com/a:b@c',
        USER_AT_HOST: 'postgres://keel@db/keel?sslmode=require',
      },
    )
    expect(env).toMatchObject({ PATH: '/usr/bin', PLAIN_URL: 'https://example.com/a:b@c' })
    for (const name of ['OPENAI_API_KEY', 'GITHUB_TOKEN', 'KEEL_STORE', 'DATABASE_URL', 'HTTPS_PROXY'])
      expect(env).not.toHaveProperty(name)
    // A URL with a user and no password carries no secret.
    expect(env.USER_AT_HOST).toBe('postgres://keel@db/keel?sslmode=require')
  })

  test('a passed-through name keeps its value', () => {
    const env = commandEnv({ passthrough: ['DATABASE_URL'], set: {} }, {}, { DATABASE_URL: 'postgres://a:b@db/x' })
    expect(env.DATABASE_URL).toBe('postgres://a:b@db/x')
  })
})
