// Who may answer an approval through the store. Anything that can write `keel_asks` (any client holding the
// database's credentials, a command the agent runs among them) could otherwise approve the owner's asks, so an answer
// from another process counts only when it carries a proof: an HMAC-SHA256, under the person's approval key, over the
// ask's ids, the owner's random nonce for that ask (so an old answer cannot be replayed on a new ask), a digest of the
// question as the answering door showed it (so a question rewritten in the row, "echo hi" shown for "rm -rf", cannot
// collect an answer meant for another), the answer and the machine it names. The key is a file in $KEEL_HOME/private,
// the same on every machine whose doors answer; no sandboxed command can see that folder (@keel/settings'
// `unreadableTargets`), and the database never holds the key.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { approvalKeyPath } from '@keel/session/paths'

/** The person's approval key, and where it was read from (for the lines that name it). */
export interface ApprovalKey {
  readonly path: string
  readonly secret: Buffer
}

/** What a remote answer says: the fields the proof covers, the only ones the owner applies. */
export interface AnswerFields {
  decision: string
  scope: string
  file?: string
  message?: string
}

/** The ask an answer is for, and the machine that answered. */
export interface AnswerTarget {
  sessionId: string
  callId: string
  nonce: string
  /** `askDigest` of the question: as the owner wrote it (the owner), as shown (the answering door). */
  asked: string
  from: string
}

const KEY_BYTES = 32

/**
 * Reads `$KEEL_HOME/private/approval.key`, creating it (32 random bytes, mode 0600) when there is none: the first
 * Keel on a machine makes it, and the person copies that file to the other machines. Throws one line naming the file.
 */
export function approvalKey(path = approvalKeyPath()): ApprovalKey {
  const read = () => Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url')
  let secret: Buffer
  try {
    secret = read()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(`cannot read the approval key ${path}: ${(error as Error).message}`)
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    try {
      writeFileSync(path, `${randomBytes(KEY_BYTES).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' })
    } catch (created) {
      // Another process made it first: its key is the one.
      if ((created as NodeJS.ErrnoException).code !== 'EEXIST') throw created
    }
    secret = read()
  }
  if (secret.length < KEY_BYTES)
    throw new Error(`the approval key ${path} is not a key (expected ${KEY_BYTES} bytes, base64url): copy it again`)
  return { path, secret }
}

/** The digest of a question as stored (`keel_asks.ask`, written as `JSON.stringify(ask)`). */
export function askDigest(ask: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(ask)).digest('base64url')
}

/** A new ask's nonce: what binds an answer to this one question. */
export function askNonce(): string {
  return randomBytes(16).toString('base64url')
}

/** The proof an answering door writes beside its answer. */
export function answerProof(key: ApprovalKey, target: AnswerTarget, answer: AnswerFields): string {
  const signed = JSON.stringify([
    'keel-answer-v1',
    target.sessionId,
    target.callId,
    target.nonce,
    target.asked,
    target.from,
    answer.decision,
    answer.scope,
    answer.file ?? null,
    answer.message ?? null,
  ])
  return createHmac('sha256', key.secret).update(signed).digest('base64url')
}

/**
 * The owner: the answer as proven, or undefined when its proof is missing or does not match (signed with another
 * key, or any field changed since). Only the covered fields come back: whatever else the row holds is dropped.
 */
export function provenAnswer(
  key: ApprovalKey,
  target: AnswerTarget,
  answer: Record<string, unknown>,
  proof: string | undefined,
): AnswerFields | undefined {
  const { decision, scope, file, message } = answer
  if (typeof decision !== 'string' || typeof scope !== 'string') return undefined
  if (file !== undefined && typeof file !== 'string') return undefined
  if (message !== undefined && typeof message !== 'string') return undefined
  const fields: AnswerFields = {
    decision,
    scope,
    ...(file !== undefined ? { file } : {}),
    ...(message !== undefined ? { message } : {}),
  }
  if (!proof) return undefined
  const expected = Buffer.from(answerProof(key, target, fields))
  const given = Buffer.from(proof)
  return given.length === expected.length && timingSafeEqual(given, expected) ? fields : undefined
}
