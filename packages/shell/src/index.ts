import { spawn } from 'node:child_process'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { Type } from 'typebox'
import { defineTool } from '@keel/tools'
import { CappedOutput } from './output.ts'

export { CappedOutput } from './output.ts'

export const name = 'keel-shell'
export const inject = ['tools']

export interface Config {
  defaultTimeout: number
  maxTimeout: number
  /** Characters kept from the start and from the end of the output. */
  outputHead: number
  outputTail: number
}

export const Config: Schema<Config> = Schema.object({
  defaultTimeout: Schema.natural().min(1).default(120).description('Seconds a command may run when the model gives no timeout.'),
  maxTimeout: Schema.natural().min(1).default(600).description('Largest timeout the model may ask for, in seconds.'),
  outputHead: Schema.natural().default(8000).description('Characters of output kept from the start.'),
  outputTail: Schema.natural().default(8000).description('Characters of output kept from the end.'),
})

const Parameters = Type.Object({
  command: Type.String({ description: 'The bash command to run.' }),
  timeout: Type.Optional(Type.Number({ description: 'Seconds before the command is killed.', minimum: 1 })),
}, { additionalProperties: false })

export function bashTool(config: Config) {
  return defineTool({
    name: 'bash',
    description: `Run a bash command in the working directory and return its combined stdout and stderr with the exit code. Output longer than ${config.outputHead + config.outputTail} characters keeps its start and end. Timeout defaults to ${config.defaultTimeout} s (max ${config.maxTimeout}). No interactive input.`,
    parameters: Parameters,
    access: (args) => ({ kind: 'execute', command: args.command }),
    presentCall: (args) => ({ title: args.command, kind: 'execute', rawInput: args }),
    execute: (args, exec) => new Promise((resolve) => {
      const seconds = Math.min(args.timeout ?? config.defaultTimeout, config.maxTimeout)
      const output = new CappedOutput(config.outputHead, config.outputTail)
      const started = Date.now()
      // A process group of its own, so a timeout or a cancel kills everything the command started.
      const child = spawn('bash', ['-c', args.command], { cwd: exec.agent?.cwd ?? process.cwd(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
      let ending: 'timeout' | 'cancelled' | undefined
      const kill = (why: 'timeout' | 'cancelled') => {
        ending ??= why
        try { process.kill(-child.pid!, 'SIGKILL') } catch {}
      }
      const timer = setTimeout(() => kill('timeout'), seconds * 1000)
      const onAbort = () => kill('cancelled')
      exec.signal.addEventListener('abort', onAbort, { once: true })
      const take = (chunk: Buffer) => {
        const text = chunk.toString('utf8')
        output.push(text)
        exec.onUpdate?.(text)
      }
      child.stdout.on('data', take)
      child.stderr.on('data', take)
      child.on('error', (error) => {
        clearTimeout(timer)
        exec.signal.removeEventListener('abort', onAbort)
        resolve({ isError: true, content: [{ type: 'text', text: `Error: could not start bash: ${error.message}` }] })
      })
      child.on('close', (code, signal) => {
        clearTimeout(timer)
        exec.signal.removeEventListener('abort', onAbort)
        const body = output.text().replace(/\s+$/, '')
        const seconds = ((Date.now() - started) / 1000).toFixed(1)
        let status: string
        if (ending === 'timeout') status = `[killed after the ${Math.min(args.timeout ?? config.defaultTimeout, config.maxTimeout)} s timeout]`
        else if (ending === 'cancelled') status = '[cancelled by the user]'
        else if (code === null) status = `[killed by ${signal}]`
        else status = `[exit code ${code} · ${seconds} s]`
        resolve({ isError: ending !== undefined, content: [{ type: 'text', text: body ? `${body}\n${status}` : status }] })
      })
    }),
  })
}

export function apply(ctx: Context, config: Config): void {
  ctx.tools.register(bashTool(config))
}
