// Test files share their worker process (vitest `isolate: false`): what one file leaves in process.env or as the
// working directory must not reach the next file run there. Vitest runs this before each file; the afterAll runs
// after the file's own hooks.
import { afterAll } from 'vitest'

const env = { ...process.env }
const cwd = process.cwd()

afterAll(() => {
  for (const key of Object.keys(process.env)) if (!(key in env)) delete process.env[key]
  Object.assign(process.env, env)
  process.chdir(cwd)
})
