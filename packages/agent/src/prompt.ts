import { platform, release } from 'node:os'

/**
 * Short on purpose: every token here is paid on every request. Project instructions (AGENTS.md and friends) follow
 * the fixed part. An agent builds this once and reuses it, so the text is byte-identical across its requests (the
 * prompt-cache prefix). The tools are not listed here: the request's `tools` says what they are, and a list frozen
 * at the first request went stale when MCP tools arrived later.
 */
export function systemPrompt(cwd: string, now = new Date(), instructions = ''): string {
  const base = [
    "You are Keel, a coding agent working in a repository on the user's machine.",
    `Working directory: ${cwd}. Platform: ${platform()} ${release()}. Date: ${now.toISOString().slice(0, 10)}.`,
    'Inspect before you change things, keep changes small and correct, and check your work by running it.',
    'When the task is done, answer briefly: what you did and anything the user must know.',
  ].join('\n')
  return instructions ? `${base}\n\n${instructions}` : base
}
