// Inside the sandbox the command runs in a PID namespace of its own: Keel cannot see its processes, and they die with
// the namespace when the shell exits, so the outside count (reap.ts) says nothing true about them. The shell counts
// them itself instead, just before it exits, and writes the number to fd 3 (runCommand's report pipe).

/**
 * `command` preceded by a trap that, when the shell exits, counts the live processes of the namespace newer than the
 * shell and writes the count to fd 3. A fresh namespace numbers its processes in order, so the sandbox's own relays
 * (started before the shell) are below it and whatever the command started, wherever it was reparented and whether
 * or not it exec'd, is above. The shell's own number is read from /proc/self, not `$$`: the runtime's seccomp helper
 * runs it in a nested namespace where `$$` counts differently from /proc. Builtins only, so the count never includes a process of its own; zombies (finished,
 * not yet reaped) are not counted.
 */
export function withLeftoverCount(command: string): string {
  return [
    `__keel_left() { local n=0 p s me; read -r me s < /proc/self/stat || return; for p in /proc/[0-9]*; do p=\${p#/proc/}; [ "$p" -gt "$me" ] 2>/dev/null || continue; read -r s < "/proc/$p/stat" || continue; s=\${s##*) }; [ "\${s%% *}" = Z ] || n=$((n + 1)); done; printf 'left %d\\n' "$n" >&3; } 2>/dev/null`,
    'trap __keel_left EXIT',
    command,
  ].join('\n')
}

/** The count the trap reported, or undefined when it did not run (the command replaced the trap, or exec'd). */
export function leftoverCount(report: string): number | undefined {
  const match = /^left (\d+)$/m.exec(report)
  return match ? Number(match[1]) : undefined
}
