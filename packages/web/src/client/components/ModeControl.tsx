import { useEffect, useState } from 'react'
import type { Api } from '../api.ts'
import type { PermissionMode } from '../../protocol.ts'

/**
 * The permission mode in the header: a select the person changes mid-session (the TUI's Shift+Tab). The host logs
 * each change on the open session and tells every tab (`permission/mode` frames reach `mode` through the app).
 */
export function ModeControl({
  api,
  sessionId,
  mode,
  onMode,
}: {
  api: Api
  sessionId: string | null
  mode: PermissionMode | null
  onMode(mode: PermissionMode): void
}) {
  const [modes, setModes] = useState<PermissionMode[]>([])
  useEffect(() => {
    api.call('permission.mode', {}).then(
      (value) => {
        setModes(value.modes)
        onMode(value.mode)
      },
      () => setModes([]), // no permissions plugin: no control
    )
  }, [api, onMode])
  if (!modes.length || !mode) return null
  return (
    <label className="mode-control">
      <span className="visually-hidden">Permission mode</span>
      <select
        data-testid="mode-control"
        value={mode}
        onChange={(event) => {
          const next = event.target.value as PermissionMode
          api
            .call('permission.mode', { ...(sessionId ? { sessionId } : {}), mode: next })
            .then((value) => {
              setModes(value.modes)
              onMode(value.mode)
            })
            .catch(() => {})
        }}
      >
        {modes.map((m) => (
          <option key={m} value={m}>
            {m} mode
          </option>
        ))}
      </select>
    </label>
  )
}
