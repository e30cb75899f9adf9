import type { Context } from 'cordis'
import type {} from '@keel/agent'
import type { PermissionService } from '@keel/permissions'
import type { SandboxService } from '@keel/sandbox'

/**
 * Starts the sandbox (its probe, then the runtime's proxy and bridges) when a request goes to the model in a mode that
 * sandboxes commands, so that the first `bash` of the process does not pay for it after the model has answered:
 * about 0.3 s that would otherwise sit between the tool call and its result.
 */
export function warmSandboxWhileTheModelThinks(ctx: Context): void {
  ctx.on('agent/request', () => {
    const permissions: PermissionService | undefined = ctx.get('permissions')
    if (!permissions || permissions.mode === 'yolo') return
    const sandbox: SandboxService | undefined = ctx.get('sandbox')
    sandbox?.warm()
  })
}
