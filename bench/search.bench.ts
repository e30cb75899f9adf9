// grep and glob on 20,000 small files (15 MB, a git repository with a .gitignore) through the fs tools, grep each way
// (the system ripgrep, and Keel's own walk and read when there is none; a literal, matched on the main thread, and a
// regex, matched in the worker), glob by Keel's own listing (it runs no ripgrep), against ripgrep run as a process
// on the same tree, interleaved; glob and `rg --files` again with a .gitignore as long as a real project's.
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fsKeel } from '../packages/fs/tests/support.ts'
import { median, ms, ratio, row } from './stats.ts'

const FILES = 20_000
const RUNS = Number(process.env.KEEL_BENCH_RUNS ?? 3)
const tree = mkdtempSync(join(tmpdir(), 'keel-bench-search-'))
for (let i = 0; i < FILES; i++) {
  const dir = join(tree, `src/m${Math.floor(i / 2000)}/p${Math.floor(i / 100) % 20}`)
  if (i % 100 === 0) mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, `f${i}.ts`), `// file ${i}\n${'export const x = 1\n'.repeat(40)}`)
}
// A .gitignore as most repositories have: every listed file is judged against it.
const SHORT_GITIGNORE = 'node_modules/\ndist/\n*.log\n'
writeFileSync(join(tree, '.gitignore'), SHORT_GITIGNORE)
// One as long as a framework's template: plain names, `*.ext`, wildcards with a literal start, anchored paths.
const LONG_GITIGNORE = [
  ...['logs', 'pids', 'coverage', 'lib-cov', '.nyc_output', '.grunt', 'bower_components', '.lock-wscript', 'out'],
  ...['.npm', '.eslintcache', '.stylelintcache', '.node_repl_history', '.yarn-integrity', '.env', '.env.local'],
  ...['.cache', '.parcel-cache', '.next', '.nuxt', 'dist', '.temp', '.docusaurus', '.tern-port', '.vscode-test'],
  ...['*.log', '*.pid', '*.seed', '*.pid.lock', '*.lcov', '*.tsbuildinfo', '*.tgz', '*.swp', '*.bak', '*~'],
  ...['npm-debug.log*', 'yarn-debug.log*', 'yarn-error.log*', 'report.[0-9]*.[0-9]*.json', '.pnp.*', '.env.*.local'],
  ...['node_modules/', 'jspm_packages/', 'web_modules/', '.rpt2_cache/', '.serverless/', '.fusebox/', '.dynamodb/'],
  ...['/build/Release', '/.yarn/cache', '/.yarn/unplugged', '/.yarn/build-state.yml', '/.vuepress/dist', '/tmp/'],
  ...['**/__snapshots__/*.snap.old', 'src/**/generated/', '!src/keep.log', '*.min.js.map', '.DS_Store', 'Thumbs.db'],
].join('\n')
execFileSync('git', ['init', '-q'], { cwd: tree })

const hasRg = spawnSync('rg', ['--version']).status === 0
const timed = async (work: () => unknown) => {
  const started = performance.now()
  await work()
  return performance.now() - started
}
const rg = (args: string[]) => () => spawnSync('rg', args, { cwd: tree, stdio: 'ignore' })
type Tool = (name: string, args: object) => () => Promise<void>
const ways = await Promise.all([
  fsKeel({ ripgrep: 'rg', allowOutsideCwd: true }),
  fsKeel({ ripgrep: '', allowOutsideCwd: true }),
])
try {
  const [viaRg, fallback] = ways.map((keel) => (name: string, args: object) => async () => {
    const result = await keel.call(name, { ...args, path: tree })
    if (result.isError) throw new Error(JSON.stringify(result.content))
  }) as [Tool, Tool]
  const samples: Record<string, number[]> = {}
  const add = async (label: string, work: () => unknown) => {
    ;(samples[label] ??= []).push(await timed(work))
  }
  for (let i = 0; i < RUNS; i++) {
    if (hasRg) await add('rg', rg(['-n', '-e', 'file 1999', '.']))
    await add('grep via rg', viaRg('grep', { pattern: 'file 1999' }))
    await add('grep fallback', fallback('grep', { pattern: 'file 1999' }))
    if (hasRg) await add('rg regex', rg(['-n', '-e', 'file 19+9', '.']))
    await add('grep regex via rg', viaRg('grep', { pattern: 'file 19+9' }))
    await add('grep regex fallback', fallback('grep', { pattern: 'file 19+9' }))
    if (hasRg) await add('rg --files', rg(['--files', '.']))
    await add('glob', viaRg('glob', { pattern: '**/*.ts' }))
    writeFileSync(join(tree, '.gitignore'), LONG_GITIGNORE)
    if (hasRg) await add('rg --files, long', rg(['--files', '.']))
    await add('glob, long', viaRg('glob', { pattern: '**/*.ts' }))
    writeFileSync(join(tree, '.gitignore'), SHORT_GITIGNORE)
  }
  const m = (label: string) => median(samples[label] ?? [])
  if (!hasRg) row('no rg on PATH: only the fallback measured')
  row(`rg -n "file 1999", ${FILES} files (median of ${RUNS})`, ms(m('rg')))
  row('grep "file 1999" through rg', ms(m('grep via rg')), `${ratio(m('grep via rg'), m('rg'))} rg (target ≤ 1.5×)`)
  row('grep "file 1999", no rg', ms(m('grep fallback')), `${ratio(m('grep fallback'), m('rg'))} rg (target ≤ 3×)`)
  row('rg -n "file 19+9"', ms(m('rg regex')))
  row(
    'grep /file 19+9/ through rg (worker)',
    ms(m('grep regex via rg')),
    `${ratio(m('grep regex via rg'), m('rg regex'))} rg`,
  )
  row(
    'grep /file 19+9/, no rg (worker)',
    ms(m('grep regex fallback')),
    `${ratio(m('grep regex fallback'), m('rg regex'))} rg`,
  )
  row('rg --files', ms(m('rg --files')))
  row("glob **/*.ts (Keel's listing)", ms(m('glob')), `${ratio(m('glob'), m('rg --files'))} rg --files (target ≤ 1.5×)`)
  const lines = LONG_GITIGNORE.split('\n').length
  row(`rg --files, a ${lines}-line .gitignore`, ms(m('rg --files, long')))
  row('glob **/*.ts, the same', ms(m('glob, long')), `${ratio(m('glob, long'), m('rg --files, long'))} rg --files`)
} finally {
  await Promise.all(ways.map((keel) => keel.dispose()))
  rmSync(tree, { recursive: true, force: true })
}
