import { execFile } from 'node:child_process'

export class GitError extends Error {}

export interface GitEnv {
  /** The shadow repository (`--git-dir`). */
  gitDir: string
  /** The working directory it snapshots (`--work-tree`); none for `init`, which git refuses with one. */
  workTree?: string
  /** The index file this operation uses (each session keeps its own, so sessions never contend for a lock). */
  indexFile: string
}

export const GIT_TIMEOUT_MS = 120_000

/**
 * Runs system git against the shadow repository, never the project's own: GIT_DIR and GIT_WORK_TREE point it, and
 * the person's global and system config are not read (no hooks, fsmonitor or autocrlf surprises). Asynchronous and
 * bounded in time, so a huge tree cannot block the event loop or hang a turn.
 */
export function git(
  env: GitEnv,
  args: string[],
  options: { input?: string; signal?: AbortSignal; okCodes?: number[]; env?: Record<string, string> } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [
        '-c',
        'core.quotepath=off',
        '-c',
        'core.autocrlf=false',
        '-c',
        'core.safecrlf=false',
        '-c',
        'gc.auto=0',
        ...args,
      ],
      {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/',
          GIT_DIR: env.gitDir,
          ...(env.workTree ? { GIT_WORK_TREE: env.workTree } : {}),
          GIT_INDEX_FILE: env.indexFile,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
          GIT_AUTHOR_NAME: 'keel',
          GIT_AUTHOR_EMAIL: 'keel@localhost',
          GIT_COMMITTER_NAME: 'keel',
          GIT_COMMITTER_EMAIL: 'keel@localhost',
          GIT_TERMINAL_PROMPT: '0',
          LC_ALL: 'C',
          ...options.env,
        },
        cwd: env.workTree ?? env.gitDir,
        maxBuffer: 256 * 1024 * 1024,
        timeout: GIT_TIMEOUT_MS,
        signal: options.signal,
      },
      (error, stdout, stderr) => {
        // Some commands answer "nothing found" with an exit code (check-ignore: 1).
        if (error && typeof error.code === 'number' && options.okCodes?.includes(error.code)) return resolve(stdout)
        if (error) {
          const code = (error as NodeJS.ErrnoException).code
          if (code === 'ENOENT') reject(new GitError('git is not installed (checkpoints need it)'))
          else
            reject(
              new GitError(
                `git ${args[0]} failed: ${
                  String(stderr || error.message)
                    .trim()
                    .split('\n')[0]
                }`,
              ),
            )
        } else {
          resolve(stdout)
        }
      },
    )
    if (options.input !== undefined) child.stdin?.end(options.input)
  })
}
