// Where a scripted `keel -p` run spends its CPU, by module: runs the 7-step bench scenario (five todo_write, one
// sandboxed `echo hello`, an answer; the scripted model answers at once) under `node --cpu-prof` from the bundle in
// dist/, then prints self and inclusive time per module (the bundle's `//! packages/…` markers say which module a
// line of a chunk belongs to). Usage: node bench/profile.mjs [--mode auto|yolo] [--steps N]. Not part of
// `npm run bench`: a profile is read, not compared. Trust it only at a load average under about 5 (the sampler
// charges descheduled time to whatever frame was running).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const arg = (name, fallback) => {
  const at = process.argv.indexOf(name)
  return at >= 0 ? process.argv[at + 1] : fallback
}
const mode = arg('--mode', 'auto')
const todos = Number(arg('--steps', 5))
const scratch = mkdtempSync(join(tmpdir(), 'keel-profile-'))
try {
  const cwd = join(scratch, 'work')
  mkdirSync(cwd)
  writeFileSync(join(cwd, 'README.md'), '# fixture\n')
  spawnSync('git', ['init', '-q'], { cwd })
  const todo = (i) => ({
    toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: `step ${i}`, status: 'in_progress' }] } }],
  })
  const steps = [
    ...Array.from({ length: todos }, (_, i) => todo(i)),
    { toolCalls: [{ name: 'bash', arguments: { command: 'echo hello' } }] },
    { text: 'All done.' },
  ]
  const script = join(scratch, 'script.json')
  writeFileSync(script, JSON.stringify({ steps }))
  const profiles = join(scratch, 'profiles')
  const run = spawnSync(
    process.execPath,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${profiles}`,
      join(root, 'bin/keel.js'),
      '-p',
      'go',
      '--model',
      `scripted/${script}`,
      '--mode',
      mode,
    ],
    { cwd, env: { ...process.env, KEEL_HOME: join(scratch, 'home') }, encoding: 'utf8' },
  )
  if (run.status !== 0) throw new Error(`keel exited ${run.status}: ${run.stderr}`)
  const file = readdirSync(profiles).find((name) => name.endsWith('.cpuprofile'))
  summarise(JSON.parse(readFileSync(join(profiles, file), 'utf8')))
} finally {
  rmSync(scratch, { recursive: true, force: true })
}

function summarise(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const markers = new Map()
  const marked = (path, line) => {
    let list = markers.get(path)
    if (!list) {
      list = []
      if (existsSync(path))
        readFileSync(path, 'utf8')
          .split('\n')
          .forEach((text, i) => {
            const found = /^\/\/! (\S+)/.exec(text)
            if (found) list.push([i, found[1]])
          })
      markers.set(path, list)
    }
    let best
    for (const [i, name] of list) {
      if (i > line) break
      best = name
    }
    return best
  }
  const moduleOf = ({ url, functionName, lineNumber }) => {
    let where = url.replace(/^file:\/\//, '')
    if (/dist\/[^/]+\.cjs$/.test(where)) where = marked(where, lineNumber) ?? where
    if (!where) return functionName.startsWith('(') ? functionName : '(native)'
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where)
    if (pkg) return pkg[1]
    const own = /packages\/([^/]+)/.exec(where)
    if (own) return `@keel/${own[1]}`
    return where.startsWith('node:') ? where : where.replace(/^.*\//, '')
  }
  const self = new Map()
  const inclusive = new Map()
  let busy = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000
    const node = byId.get(profile.samples[i])
    const own = moduleOf(node.callFrame)
    self.set(own, (self.get(own) ?? 0) + dt)
    if (own !== '(idle)') busy += dt
    const seen = new Set()
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const name = moduleOf(byId.get(id).callFrame)
      if (seen.has(name)) continue
      seen.add(name)
      inclusive.set(name, (inclusive.get(name) ?? 0) + dt)
    }
  }
  const show = (map) =>
    [...map]
      .filter(([name]) => name !== '(idle)' && name !== '(root)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([name, ms]) => `${ms.toFixed(1).padStart(8)} ms  ${name}`)
      .join('\n')
  const wall = (profile.endTime - profile.startTime) / 1000
  console.log(
    `mode ${mode}, ${todos} todo_write + bash + answer: ${wall.toFixed(0)} ms profiled, ${busy.toFixed(0)} ms on the main thread`,
  )
  console.log(`-- self time by module\n${show(self)}`)
  console.log(`-- inclusive time by module\n${show(inclusive)}`)
}
