// Whether commands can be sandboxed here: the runtime's dependency check and a real bubblewrap namespace (containers
// often forbid unprivileged user namespaces). The check costs a first sandboxed command of every process tens of ms
// (two processes and the runtime's lookups), so a positive answer is kept in $KEEL_HOME/cache with what it depends
// on: the tools' files, the kernel, the user-namespace switches and the namespaces this process runs in (a container
// is another answer). The cached answer is a hint: the service checks again once the first command has run, and a
// changed answer replaces it. A wrong "yes" is the safe way round: the wrap then fails and the command does not run.
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync, readlinkSync, statSync } from 'node:fs'
import { release } from 'node:os'
import { readCache, writeCache } from '@keel/session/cache'
import { which } from './which.ts'

export type SandboxStatus = { available: true } | { available: false; reason: string }

const CACHE_NAME = 'sandbox-probe.json'

/** The kernel's switches for unprivileged user namespaces (Debian's, the upstream limit, Ubuntu's AppArmor rule). */
const USERNS_SWITCHES = [
  '/proc/sys/kernel/unprivileged_userns_clone',
  '/proc/sys/user/max_user_namespaces',
  '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
]

/** What a probe's answer holds for; undefined where nothing is cached (not Linux). */
function probeKey(): string | undefined {
  if (process.platform !== 'linux') return undefined
  const tools = ['bwrap', 'socat', 'rg'].map((bin) => {
    const path = which(bin)
    if (!path) return [bin]
    const stats = statSync(path)
    return [path, stats.ino, stats.size, stats.mtimeMs]
  })
  const read = (path: string, how: (path: string) => string) => {
    try {
      return how(path)
    } catch {
      return null
    }
  }
  const inputs = {
    kernel: release(),
    uid: process.getuid?.(),
    tools,
    switches: USERNS_SWITCHES.map((path) => read(path, (file) => readFileSync(file, 'utf8').trim())),
    namespaces: ['user', 'mnt', 'pid'].map((ns) => read(`/proc/self/ns/${ns}`, readlinkSync)),
  }
  return createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 32)
}

/** The answer an earlier process found for this machine as it is now, when it was a yes. */
export function cachedProbe(): SandboxStatus | undefined {
  try {
    const key = probeKey()
    if (!key) return undefined
    const stored = JSON.parse(readCache(CACHE_NAME) ?? '') as { key?: unknown; available?: unknown }
    return stored.key === key && stored.available === true ? { available: true } : undefined
  } catch {
    return undefined
  }
}

/** Keeps a yes for the next process; a no is dropped (it is checked again, and is quick to find anyway). */
export function rememberProbe(status: SandboxStatus): void {
  try {
    const key = probeKey()
    if (!key) return
    writeCache(CACHE_NAME, JSON.stringify(status.available ? { key, available: true } : { key, available: false }))
  } catch {
    // A cache: the next process probes again.
  }
}

const HOW_TO_FIX =
  'install bubblewrap, socat and ripgrep (Debian: apt-get install bubblewrap socat ripgrep), or run with --mode yolo'

/** The runtime's own dependency check (bwrap, socat, ripgrep), then a real namespace: containers often forbid them. */
export async function probe(): Promise<SandboxStatus> {
  try {
    const { SandboxManager } = await import('@anthropic-ai/sandbox-runtime')
    if (!SandboxManager.isSupportedPlatform()) return { available: false, reason: `no sandbox for ${process.platform}` }
    // rg named here: the runtime's own config names `true` for it (baseConfig), which would always be found.
    const check = await SandboxManager.checkDependenciesAsync({ command: 'rg' })
    if (check.errors.length) return { available: false, reason: `${check.errors.join('; ')}: ${HOW_TO_FIX}` }
    if (process.platform === 'linux') {
      const failure = await new Promise<string | undefined>((done) => {
        execFile(
          'bwrap',
          [
            // So that a bwrap whose parent goes takes its namespace with it. (One killed in the middle of its start,
            // as its timeout does, can still leave the namespace's init behind, waiting on it.)
            '--die-with-parent',
            '--ro-bind',
            '/',
            '/',
            '--unshare-user',
            '--unshare-net',
            '--unshare-pid',
            '--dev',
            '/dev',
            '--proc',
            '/proc',
            'true',
          ],
          { timeout: 10_000 },
          (error, _out, stderr) => {
            done(error ? String(stderr).trim().split('\n')[0] || error.message : undefined)
          },
        )
      })
      if (failure)
        return {
          available: false,
          reason: `bubblewrap cannot create namespaces here (${failure}); allow unprivileged user namespaces or run with --mode yolo`,
        }
    }
    return { available: true }
  } catch (error) {
    return { available: false, reason: `the sandbox runtime did not load: ${(error as Error).message}` }
  }
}
