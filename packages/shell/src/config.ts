import Schema from 'schemastery'
import { EnvConfig } from './env.ts'

export interface Config {
  defaultTimeout: number
  maxTimeout: number
  /** Characters kept from the start and from the end of the output. */
  outputHead: number
  outputTail: number
  /** The commands' environment: credentials dropped unless passed through, plain-output defaults (env.ts). */
  env: EnvConfig
  /** Background jobs (`bash` with `background: true`) one session may run at once. */
  maxJobs: number
  /** Characters of unread output a background job keeps (the oldest are dropped, and counted). */
  jobOutput: number
  /** Seconds a killed job gets between SIGTERM and SIGKILL. */
  jobKillGrace: number
}

export const Config: Schema<Config> = Schema.object({
  defaultTimeout: Schema.natural()
    .min(1)
    .default(120)
    .description('Seconds a command may run when the model gives no timeout.'),
  maxTimeout: Schema.natural().min(1).default(600).description('Largest timeout the model may ask for, in seconds.'),
  outputHead: Schema.natural().default(8000).description('Characters of output kept from the start.'),
  outputTail: Schema.natural().default(8000).description('Characters of output kept from the end.'),
  env: EnvConfig,
  maxJobs: Schema.natural().default(4).description('Background jobs one session may run at once.'),
  jobOutput: Schema.natural()
    .min(1)
    .default(64_000)
    .description('Characters of unread output a background job keeps; older output is dropped and counted.'),
  jobKillGrace: Schema.number()
    .min(0)
    .default(3)
    .description('Seconds a killed background job gets between SIGTERM and SIGKILL.'),
})
