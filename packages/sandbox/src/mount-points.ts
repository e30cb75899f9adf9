// The empty files and folders this process's sandboxes keep on the host as mount points for missing protected paths
// (placeholders.ts makes and journals them), for what must not take them for the person's files: a checkpoint's
// snapshot of the work tree taken while a sandbox lives (a background job, a spare waiting for its command).

/** Every placeholder made since no sandbox was running; the runtime removes them all when the last one ends. */
export const points = new Set<string>()

/** The wraps of the process, one after another (see placeholders.ts for why). */
let wrapping: Promise<unknown> = Promise.resolve()

export function oneAtATime<T>(make: () => Promise<T>): Promise<T> {
  const next = wrapping.then(make)
  wrapping = next.catch(() => {})
  return next
}

/** The mount points on disk once no wrap is making any: a path made after this resolves was absent before it. */
export function mountPoints(): Promise<ReadonlySet<string>> {
  return wrapping.then(() => new Set(points))
}

/** The mount points now, a wrap perhaps making more (what a walk that began before it may have read). */
export function mountPointsNow(): ReadonlySet<string> {
  return new Set(points)
}
