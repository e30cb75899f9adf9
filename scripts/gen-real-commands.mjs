// Writes packages/permissions/tests/fixtures/real-commands.jsonl: shell commands people and models really type, for
// the read-only classifier's tests. Sources (each line names its own):
//   - tldr-pages (https://github.com/tldr-pages/tldr, CC BY 4.0): the examples of pages/common and pages/linux,
//     placeholders filled with their text (`{{path/to/file}}` → `path/to/file`, `{{[-o|--output]}}` → `-o`). All
//     pages of the commands the classifier knows or unwraps, and every 6th page of the rest.
//   - the `sh`/`bash`/`shell`/`console` blocks of the READMEs of the npm packages in node_modules.
// Usage: node scripts/gen-real-commands.mjs <tldr checkout> (run from the repository root).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const tldr = process.argv[2]
if (!tldr) throw new Error('usage: node scripts/gen-real-commands.mjs <path to a tldr-pages checkout>')

const KNOWN = new Set(
  `ls cat head tail wc pwd cd echo printf true false test grep egrep fgrep rg find sort uniq cut tr nl diff cmp
  basename dirname realpath readlink which type file stat du tree sed jq uname whoami id nproc date env printenv
  command node python3 python git sleep sha1sum sha256sum sha512sum md5sum cksum awk xargs timeout nice nohup time
  stdbuf sudo doas exec builtin setsid ionice busybox bash sh eval rm mv cp tee touch chmod ln mkdir`.split(/\s+/),
)

/** `{{[-o|--output]}}` → `-o`, `{{path/to/file}}` → `path/to/file`. */
function fill(line) {
  return line.replace(/\{\{(.*?)\}\}/g, (_, inner) => {
    const choice = /^\[(.*)\]$/.exec(inner)
    return choice ? choice[1].split('|')[0] : inner
  })
}

const out = new Map()
for (const dir of ['common', 'linux']) {
  const pages = readdirSync(join(tldr, 'pages', dir))
    .filter((f) => f.endsWith('.md'))
    .sort()
  pages.forEach((page, index) => {
    const name = page.slice(0, -3)
    const known = KNOWN.has(name) || name.startsWith('git-')
    if (!known && index % 6 !== 0) return
    for (const line of readFileSync(join(tldr, 'pages', dir, page), 'utf8').split('\n')) {
      const m = /^`(.+)`$/.exec(line.trim())
      if (!m) continue
      const command = fill(m[1])
      if (!out.has(command)) out.set(command, `tldr:${dir}/${page}`)
    }
  })
}

function readmes(dir, depth, found) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    let stat
    try {
      stat = statSync(path)
    } catch {
      continue
    }
    if (stat.isDirectory()) {
      if (depth < 4) readmes(path, depth + 1, found)
    } else if (/^readme(\.md)?$/i.test(name)) found.push(path)
  }
  return found
}
for (const file of readmes('node_modules', 0, []).sort()) {
  let inShell = false
  let inOther = false
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const fence = /^\s*```\s*([\w-]*)/.exec(raw)
    if (fence) {
      if (inShell || inOther) inShell = inOther = false
      else if (['sh', 'bash', 'shell', 'console', 'shell-session', 'zsh'].includes(fence[1])) inShell = true
      else inOther = true
      continue
    }
    if (!inShell) continue
    const command = raw.trim().replace(/^\$ /, '')
    if (!command || command.startsWith('#') || command.length > 200) continue
    if (!out.has(command)) out.set(command, `npm:${file.slice('node_modules/'.length)}`)
  }
}

const lines = [...out].map(([command, source]) => JSON.stringify({ source, command }))
writeFileSync('packages/permissions/tests/fixtures/real-commands.jsonl', `${lines.join('\n')}\n`)
console.log(`${lines.length} commands`)
