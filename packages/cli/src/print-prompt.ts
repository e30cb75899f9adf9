// The prompt of a print run, read before anything boots: the first model request needs it (first-request.ts).
import { fstatSync, readFileSync, statSync } from 'node:fs'
import { UsageError } from './args.ts'

/** The prompt of a print run: the argument, the piped text, or the argument followed by the piped text. */
export async function printPrompt(promptArg: string | undefined): Promise<string> {
  const piped = await readStdin(promptArg !== undefined)
  if (promptArg === undefined) return piped
  return piped ? `${promptArg}\n\n${fenced(piped)}` : promptArg
}

/** A fence longer than any backtick run inside, so the piped text cannot close it early. */
function fenced(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((run) => run[0].length))
  const fence = '`'.repeat(longest + 1)
  return `${fence}\n${text}\n${fence}`
}

/** More text than one prompt can usefully hold; stdin is not read past it (`keel -p … < /dev/zero` must not hang). */
const STDIN_LIMIT = 10 * 1024 * 1024

function stdinTooLarge(): UsageError {
  return new UsageError(
    `stdin holds more than ${STDIN_LIMIT / 1024 / 1024} MB, too much for one prompt; name the file in the prompt and let the agent read it`,
  )
}

/**
 * Reads piped stdin to its end, up to STDIN_LIMIT. With a prompt argument as well, stdin is optional: a pipe that
 * stays silent (held open by a parent that never writes) is given up after a short wait instead of hanging the run.
 */
async function readStdin(optional: boolean): Promise<string> {
  const atOnce = stdinAtOnce()
  if (atOnce !== undefined) return atOnce.trim()
  const stdin = process.stdin
  if (stdin.isTTY) return ''
  return new Promise((done, fail) => {
    const chunks: Buffer[] = []
    let size = 0
    const stop = () => {
      clearTimeout(idle)
      stdin.off('data', onData)
      stdin.off('end', finish)
      stdin.off('error', onError)
      stdin.pause()
    }
    const finish = () => {
      stop()
      done(Buffer.concat(chunks).toString('utf8').trim())
    }
    const onError = (error: Error) => {
      if (optional) return finish()
      stop()
      fail(error)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > STDIN_LIMIT) {
        stop()
        stdin.destroy()
        fail(stdinTooLarge())
        return
      }
      chunks.push(chunk)
      clearTimeout(idle)
    }
    // Long enough for a slow producer (`git log | keel -p …`) to start writing; once it has, read to the end.
    const idle = optional ? setTimeout(finish, 2000) : undefined
    stdin.on('data', onData)
    stdin.once('end', finish)
    stdin.once('error', onError)
  })
}

/**
 * stdin that needs no waiting: a file (`keel -p … < notes.md`) is read whole, and /dev/null (a run from cron, CI or
 * `nohup`) is empty. Both skip process.stdin, whose stream costs a cold run about 5 ms before the first request.
 * Anything else (a pipe, a terminal, another device) is undefined.
 */
function stdinAtOnce(): string | undefined {
  let stat: ReturnType<typeof fstatSync>
  try {
    stat = fstatSync(0)
  } catch {
    return undefined // no stdin at all (a closed descriptor): the stream reports it as it always did
  }
  if (stat.isFile()) {
    if (stat.size > STDIN_LIMIT) throw stdinTooLarge()
    return readFileSync(0, 'utf8')
  }
  if (stat.isCharacterDevice() && stat.rdev === statSync('/dev/null').rdev) return ''
  return undefined
}
