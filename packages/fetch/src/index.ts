import type { Context } from 'cordis'
import type { Config } from './tool.ts'
import { webFetchTool } from './tool.ts'

export { Config, hostOf, webFetchTool } from './tool.ts'
export { isPublicAddress, rangeOf } from './address.ts'

export const name = 'keel-fetch'
export const inject = ['tools']

export function apply(ctx: Context, config: Config): void {
  ctx.tools.register(webFetchTool(config))
}
