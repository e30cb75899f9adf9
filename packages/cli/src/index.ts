export { main, VERSION } from './main.ts'
export { FRONT_DOORS } from './doors.ts'
export { boot, shutdown, quietCordisLogger, BootError, DEFAULT_COMPOSITION } from './boot.ts'
export { KeelLoader } from './loader.ts'
export { SHIPPED_COMPOSITION } from './composition.ts'
export {
  parse,
  helpText,
  FLAGS,
  UsageError,
  DEFAULT_MODEL,
  modelSpec,
  workingDirectory,
  type Command,
  type Flags,
} from './args.ts'
export { openAgent, latestSessionId } from './agent.ts'
