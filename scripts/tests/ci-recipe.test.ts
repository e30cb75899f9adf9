// The CI recipe users copy (docs/ci/keel-review.yml), run as GitHub would run it: its steps' shell scripts, in
// order, under `bash -eo pipefail`, against the packed and installed package (as install.test.ts installs it), in a
// git checkout of a pull request, with the scripted model for the provider and a stand-in `gh` that keeps the
// comment. The `Sandbox` step (sudo apt-get, sysctl) is the runner's setup and is not run here; the machine's own
// bubblewrap sandboxes the review's command, and `--fail-on-denial` would fail the step if it could not.
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { HAS_BWRAP, skipWithout } from '../../test-support/system-tools.ts'

const root = join(import.meta.dirname, '../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-ci-recipe-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** The workflow's steps that have a name and a `run: |` script, with the script unindented. */
function runSteps(workflow: string): { name: string; run: string }[] {
  const lines = workflow.split('\n')
  const steps: { name: string; run: string }[] = []
  let name: string | undefined
  for (let i = 0; i < lines.length; i++) {
    const named = /^\s*- name: (.+)$/.exec(lines[i]!)
    if (named) name = named[1]!.trim()
    const run = /^(\s*)run: \|$/.exec(lines[i]!)
    if (!run || !name) continue
    const body: string[] = []
    let indent: number | undefined
    for (i++; i < lines.length; i++) {
      const line = lines[i]!
      const depth = line.length - line.trimStart().length
      if (line.trim() && depth <= run[1]!.length) break
      indent ??= depth
      body.push(line.slice(indent))
    }
    i--
    steps.push({ name, run: body.join('\n').trimEnd() + '\n' })
    name = undefined
  }
  return steps
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    stdio: 'pipe',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'a',
      GIT_AUTHOR_EMAIL: 'a@example.com',
      GIT_COMMITTER_NAME: 'a',
      GIT_COMMITTER_EMAIL: 'a@example.com',
    },
  })

test('docs/ci/keel-review.yml: install, review with the limits and the schema, post the verdict', () => {
  if (skipWithout('bubblewrap', HAS_BWRAP, 'the CI recipe (its review runs a sandboxed command)')) return
  const workflow = readFileSync(join(root, 'docs/ci/keel-review.yml'), 'utf8')
  const steps = runSteps(workflow)
  expect(steps.map((step) => step.name)).toEqual(['Install Keel', 'Sandbox', 'Review', 'Post the review'])
  const [install, sandbox, review, post] = steps as [
    (typeof steps)[0],
    (typeof steps)[0],
    (typeof steps)[0],
    (typeof steps)[0],
  ]
  expect(sandbox.run).toContain('apt-get install -y -qq --no-install-recommends bubblewrap socat ripgrep')
  expect(sandbox.run).toContain('kernel.apparmor_restrict_unprivileged_userns=0')
  expect(review.run).toMatch(/--mode auto --fail-on-denial/)
  expect(review.run).toMatch(/--max-turns \d+ --timeout \S+ --max-budget-usd \S+/)

  // A pull request: a base on origin/main and one commit on top.
  const repo = join(scratch, 'repo')
  mkdirSync(repo)
  git(repo, 'init', '-q', '-b', 'feature')
  writeFileSync(join(repo, 'add.js'), 'export const add = (a, b) => a + b\n')
  git(repo, 'add', '.')
  git(repo, 'commit', '-qm', 'base')
  git(repo, 'update-ref', 'refs/remotes/origin/main', 'HEAD')
  writeFileSync(join(repo, 'add.js'), 'export const add = (a, b) => a - b\n')
  git(repo, 'commit', '-qam', 'change')

  // The model: one sandboxed command (denied, it would exit 3), then an answer the schema accepts.
  const script = join(scratch, 'review-script.json')
  const answer = {
    verdict: 'request-changes',
    summary: 'add subtracts.',
    problems: [{ file: 'add.js', line: 1, problem: 'a - b where a + b is meant' }],
  }
  writeFileSync(
    script,
    JSON.stringify({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'grep -n "a - b" add.js' } }] },
        { text: JSON.stringify(answer) },
      ],
    }),
  )

  // `npm i -g keel` from the registry becomes the packed checkout, installed offline into a prefix of its own.
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', scratch], { cwd: root, stdio: 'pipe' })
  const tarball = join(scratch, readdirSync(scratch).find((name) => name.endsWith('.tgz'))!)
  const prefix = join(scratch, 'prefix')
  const bin = join(scratch, 'bin')
  mkdirSync(bin)
  // The stand-in `gh` keeps what it was asked to post.
  writeFileSync(join(bin, 'gh'), '#!/bin/sh\nprintf "%s\\n" "$@" > "$RUNNER_TEMP/gh-args"\n')
  chmodSync(join(bin, 'gh'), 0o755)
  const runnerTemp = join(scratch, 'runner-temp')
  mkdirSync(runnerTemp)
  const env = {
    ...process.env,
    PATH: `${join(prefix, 'bin')}:${bin}:${process.env.PATH}`,
    KEEL_HOME: join(scratch, 'home'),
    KEEL_FROM_SOURCE: '',
    KEEL_MODE: '',
    NODE_PATH: '',
    RUNNER_TEMP: runnerTemp,
    KEEL_MODEL: `scripted/${script}`,
    BASE_REF: 'main',
    PR_NUMBER: '7',
    npm_config_prefix: prefix,
    npm_config_cache: join(scratch, 'npm-cache'),
    npm_config_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
  }
  const bash = (run: string) =>
    spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', run], { cwd: repo, env, encoding: 'utf8' })

  expect(install.run).toContain('npm i -g keel\n')
  const installed = bash(install.run.replace('npm i -g keel\n', `npm i -g ${tarball}\n`))
  expect(installed.status, installed.stderr).toBe(0)
  expect(installed.stdout).toMatch(/^keel \d+\.\d+\.\d+$/m)

  const reviewed = bash(review.run)
  expect(reviewed.status, reviewed.stderr).toBe(0)
  expect(reviewed.stderr).not.toContain('sandbox is off')
  const result = JSON.parse(readFileSync(join(runnerTemp, 'review.json'), 'utf8'))
  expect(result).toMatchObject({ reason: 'completed', structured: answer, permissionDenials: [] })
  expect(result.transcript).toEqual([JSON.stringify(answer)])
  // The diff reached the model on stdin, and the command ran with its output in the log.
  const sessions = join(env.KEEL_HOME, 'sessions')
  const folder = join(sessions, readdirSync(sessions)[0]!)
  const log = readFileSync(join(folder, readdirSync(folder).find((name) => name.endsWith('.jsonl'))!), 'utf8')
  expect(log).toContain('+export const add = (a, b) => a - b')
  expect(log).toContain('1:export const add = (a, b) => a - b')

  const posted = bash(post.run)
  expect(posted.status, posted.stderr).toBe(0)
  const args = readFileSync(join(runnerTemp, 'gh-args'), 'utf8').trim().split('\n')
  expect(args.slice(0, 4)).toEqual(['pr', 'comment', '7', '--body-file'])
  expect(readFileSync(args[4]!, 'utf8')).toBe(
    '**Keel: request-changes**\n\nadd subtracts.\n\n- `add.js:1`: a - b where a + b is meant\n',
  )
}, 180_000)
