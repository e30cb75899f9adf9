// The empty files and folders this process's sandboxes keep on the host as mount points for missing protected paths
// (placeholders.ts makes and journals them), for what must not take them for the person's files: a checkpoint's
// snapshot of the work tree taken while a sandbox lives (a background job, a spare waiting for its command).

/** Every placeholder made since no sandbox was running; the runtime removes them all when the last one ends. */
export const points = new Set<string>()

/**
 * The mount points now: every one on disk, and perhaps some a wrap under way has yet to make (each is in the set
 * before it is made). A walk of the tree that reads this before it starts and again after it ends knows which it
 * cannot have taken for the person's files.
 */
export function mountPointsNow(): ReadonlySet<string> {
  return new Set(points)
}
