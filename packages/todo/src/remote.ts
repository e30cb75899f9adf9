// `keel plan` from a shell while a door holds the session: the process that holds its writer lock listens on a Unix
// socket in `$KEEL_HOME/run/` (a 0700 folder, so only the person reaches it) and applies what arrives through
// ctx.plans, the same as the door's own edits. One JSON line in, one JSON line out.
import { existsSync, unlinkSync } from 'node:fs'
import { createConnection, createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { ensureDirectory, keelHome } from '@keel/session'
import { isPlanEdit, type PlanEdit } from './edit.ts'
import { parseTodoList } from './plan.ts'
import type { ProposalAnswer } from './proposal.ts'
import type { TodoItem } from './types.ts'

/** What `keel plan` asks of the process holding the session. */
export type PlanRequest = { op: 'edit'; edit: PlanEdit } | { op: 'answer'; answer: ProposalAnswer }
export type PlanReply = { ok: true } | { error: string }

/** Beyond this a request is not a plan edit; the connection is dropped. */
const MAX_REQUEST = 256 * 1024
const REPLY_TIMEOUT_MS = 30_000
/** Unix socket paths are at most 107 bytes on Linux. */
const MAX_SOCKET_PATH = 100

/** Where the holder of session `id` listens, or undefined when the path would be too long for a socket. */
export function planSocketPath(id: string, home = keelHome()): string | undefined {
  const path = join(home, 'run', `${id}.sock`)
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH ? path : undefined
}

/** A request read from the wire, checked field by field; undefined when it is not one. */
function parsePlanRequest(value: unknown): PlanRequest | undefined {
  const v = value as { op?: unknown; edit?: unknown; answer?: unknown } | null
  if (v?.op === 'edit' && isPlanEdit(v.edit)) return { op: 'edit', edit: v.edit }
  if (v?.op !== 'answer') return undefined
  const a = v.answer as Record<string, unknown> | null
  const todos = a?.todos === undefined ? undefined : parseTodoList(a.todos)
  if (todos === null) return undefined
  const plan = typeof a?.plan === 'string' ? a.plan : undefined
  const rest: { plan?: string; todos?: TodoItem[] } = {
    ...(plan !== undefined ? { plan } : {}),
    ...(todos ? { todos } : {}),
  }
  if (a?.kind === 'reject' && typeof a.message === 'string')
    return { op: 'answer', answer: { kind: 'reject', message: a.message } }
  if (a?.kind === 'edit') return { op: 'answer', answer: { kind: 'edit', ...rest } }
  if (a?.kind === 'approve' && (a.mode === 'ask' || a.mode === 'auto'))
    return { op: 'answer', answer: { kind: 'approve', mode: a.mode, ...rest } }
  return undefined
}

/** Listens at `path` for the session this process holds; `handle` applies a request. Returns the server. */
export function listenForPlanEdits(path: string, handle: (request: PlanRequest) => Promise<PlanReply>): Server {
  ensureDirectory(join(path, '..'))
  // This process holds the session's lock: a socket file left there is a dead holder's.
  if (existsSync(path)) unlinkSync(path)
  const server = createServer((socket) => {
    let buffer = ''
    socket.setEncoding('utf8')
    socket.setTimeout(REPLY_TIMEOUT_MS, () => socket.destroy())
    socket.on('error', () => {})
    socket.on('data', (chunk: string) => {
      buffer += chunk
      if (buffer.length > MAX_REQUEST) return void socket.destroy()
      const end = buffer.indexOf('\n')
      if (end < 0) return
      socket.pause()
      let request: PlanRequest | undefined
      try {
        request = parsePlanRequest(JSON.parse(buffer.slice(0, end)))
      } catch {
        request = undefined
      }
      const reply: Promise<PlanReply> = request
        ? handle(request).catch((error: unknown) => ({ error: (error as Error).message }))
        : Promise.resolve({ error: 'not a plan request' })
      void reply.then((value) => socket.end(`${JSON.stringify(value)}\n`))
    })
  })
  server.on('error', () => {})
  server.listen(path)
  server.unref()
  return server
}

/** Sends one request to the process holding the session; rejects when nobody listens there. */
export function sendPlanRequest(path: string, request: PlanRequest): Promise<PlanReply> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path)
    let buffer = ''
    socket.setEncoding('utf8')
    socket.setTimeout(REPLY_TIMEOUT_MS, () => socket.destroy(new Error('the session holder did not answer')))
    socket.on('connect', () => socket.write(`${JSON.stringify(request)}\n`))
    socket.on('data', (chunk: string) => {
      buffer += chunk
    })
    socket.on('error', reject)
    socket.on('close', () => {
      try {
        resolve(JSON.parse(buffer) as PlanReply)
      } catch {
        reject(new Error('the session holder sent no answer'))
      }
    })
  })
}
