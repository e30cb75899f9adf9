import { retryText } from '@keel/llm/retry-text'
import { useDeferredValue, useEffect, useLayoutEffect, useRef, useState } from 'react'
import { LazyMarkdown as Markdown } from '../markdown/LazyMarkdown.tsx'
import type { MessageSource } from '@keel/session/messages'
import type { ConversationSnapshot, TranscriptItem } from '../store.ts'
import { ApprovalCard, type AnswerAsk } from './ApprovalCard.tsx'
import { ProposalCard, type AnswerPlan } from './ProposalCard.tsx'
import { RewindCard, type RewindActions } from './RewindCard.tsx'
import { ToolRow } from './ToolRow.tsx'

/**
 * Messages and tool rows, with an approval card under each call that waits for one (a subagent's asks, which have
 * no row here, come last). Assistant text is Markdown (raw HTML in it stays text); everything else is text nodes.
 */
export function Transcript({
  snapshot,
  onLoadOlder,
  onAnswer,
  rewind,
  onAnswerPlan,
}: {
  snapshot: ConversationSnapshot
  onLoadOlder: () => void
  onAnswer: AnswerAsk
  /** "Rewind to here" on each prompt (absent: no such button). */
  rewind?: RewindActions
  /** Answers a plan proposal's card (absent: the card only shows). */
  onAnswerPlan?: AnswerPlan
}) {
  const scroller = useRef<HTMLDivElement>(null)
  const pinned = useRef(true)
  const previousFirst = useRef<{ seq: number; height: number } | null>(null)

  const onScroll = () => {
    const el = scroller.current
    if (el) pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 48
  }

  // Follow new output while the reader is at the bottom; keep the reading position when older pages are prepended.
  useLayoutEffect(() => {
    const el = scroller.current
    if (!el) return
    const before = previousFirst.current
    if (before && snapshot.firstSeq < before.seq && !pinned.current) el.scrollTop += el.scrollHeight - before.height
    else if (pinned.current) el.scrollTop = el.scrollHeight
    previousFirst.current = { seq: snapshot.firstSeq, height: el.scrollHeight }
  })

  // biome-ignore lint/correctness/useExhaustiveDependencies: re-pin to the bottom whenever another session is shown
  useEffect(() => {
    pinned.current = true
  }, [snapshot.sessionId])

  return (
    <div className="transcript" ref={scroller} onScroll={onScroll} data-testid="transcript">
      <div className="transcript-inner">
        {snapshot.hasMore && (
          <button type="button" className="load-older" onClick={onLoadOlder} disabled={snapshot.loadingOlder}>
            {snapshot.loadingOlder ? 'Loading…' : 'Load earlier messages'}
          </button>
        )}
        {snapshot.olderError && <div className="notice error">{snapshot.olderError}</div>}
        {snapshot.openState === 'loading' && !snapshot.items.length && <div className="placeholder">Loading…</div>}
        {snapshot.openState === 'error' && <div className="notice error">{snapshot.openError}</div>}
        {snapshot.openState === 'open' && !snapshot.items.length && !snapshot.partial && (
          <div className="placeholder">Ask Keel to do something in this repository.</div>
        )}
        {snapshot.items.map((item) => (
          <Item
            key={item.key}
            item={item}
            snapshot={snapshot}
            onAnswer={onAnswer}
            rewind={rewind}
            onAnswerPlan={onAnswerPlan}
          />
        ))}
        {snapshot.asks
          .filter((ask) => !hasRow(snapshot, ask.sessionId, ask.callId))
          .map((ask) => (
            <ApprovalCard
              key={`${ask.sessionId}/${ask.callId}`}
              ask={ask}
              subagent={ask.sessionId !== snapshot.sessionId}
              onAnswer={onAnswer}
            />
          ))}
        {snapshot.partial && (snapshot.partial.text || snapshot.partial.reasoning) && (
          <div className="message assistant streaming" data-testid="streaming">
            {snapshot.partial.reasoning && <div className="reasoning">{snapshot.partial.reasoning}</div>}
            <StreamingText text={snapshot.partial.text} />
          </div>
        )}
        {snapshot.running && !snapshot.partial && (
          <div className="working" aria-live="polite">
            {snapshot.retry ? `${retryText(snapshot.retry)}…` : 'Working…'}
          </div>
        )}
      </div>
    </div>
  )
}

/** What a message the harness put in the person's place is, by its `source` (the person's own prompts have none). */
const HARNESS_LABELS: Record<Exclude<MessageSource, 'user'>, string> = {
  steer: 'You, while the agent worked',
  compaction: 'Summary of earlier conversation',
  shell: 'You ran a command (with ! in the terminal)',
  context: 'Context',
  plan: 'Keel told the model about the plan',
}

export function harnessLabel(source: string): string {
  return Object.hasOwn(HARNESS_LABELS, source) ? HARNESS_LABELS[source as keyof typeof HARNESS_LABELS] : 'Context'
}

function UserMessage({ item, rewind }: { item: Extract<TranscriptItem, { kind: 'user' }>; rewind?: RewindActions }) {
  const [rewinding, setRewinding] = useState(false)
  return (
    <>
      <div className={`message user${item.source !== 'user' ? ' harness' : ''}`} data-testid="user-message">
        {item.source !== 'user' && <div className="message-label">{harnessLabel(item.source)}</div>}
        <div className="message-text">{item.text}</div>
        {item.images?.map((label, i) => (
          <div key={i} className="message-image" data-testid="message-image">
            {label}
          </div>
        ))}
        {rewind && !rewinding && (
          <button
            type="button"
            className="rewind-here"
            data-testid="rewind-here"
            title="Go back to before this prompt: restore the files, continue in a fork, or both"
            onClick={() => setRewinding(true)}
          >
            Rewind to here
          </button>
        )}
      </div>
      {rewind && rewinding && (
        <RewindCard seq={item.seq} prompt={item.text} actions={rewind} onClose={() => setRewinding(false)} />
      )}
    </>
  )
}

function hasRow(snapshot: ConversationSnapshot, sessionId: string, callId: string): boolean {
  return (
    sessionId === snapshot.sessionId && snapshot.items.some((item) => item.kind === 'tool' && item.callId === callId)
  )
}

function Item({
  item,
  snapshot,
  onAnswer,
  rewind,
  onAnswerPlan,
}: {
  item: TranscriptItem
  snapshot: ConversationSnapshot
  onAnswer: AnswerAsk
  rewind?: RewindActions
  onAnswerPlan?: AnswerPlan
}) {
  switch (item.kind) {
    case 'user':
      return <UserMessage item={item} rewind={item.source === 'user' && !snapshot.running ? rewind : undefined} />
    case 'assistant':
      return (
        <div className="message assistant" data-testid="assistant-message">
          {item.reasoning && (
            <details className="reasoning-block">
              <summary>Reasoning</summary>
              <div className="reasoning">{item.reasoning}</div>
            </details>
          )}
          {item.text && (
            <div className="message-text">
              <Markdown text={item.text} />
            </div>
          )}
        </div>
      )
    case 'tool': {
      const ask = snapshot.asks.find(
        (waiting) => waiting.sessionId === snapshot.sessionId && waiting.callId === item.callId,
      )
      return (
        <>
          <ToolRow
            item={item}
            output={snapshot.outputs[item.callId]}
            run={snapshot.subagentPlans[item.callId] ?? item.run}
          />
          {ask && <ApprovalCard ask={ask} subagent={false} onAnswer={onAnswer} />}
        </>
      )
    }
    case 'notice':
      return <div className={`notice ${item.tone}`}>{item.text}</div>
    case 'proposal':
      // Keyed by status and edits: a card answered or edited elsewhere starts from what the log now says.
      return (
        <ProposalCard
          key={`${item.proposal.status}:${item.proposal.plan}:${JSON.stringify(item.proposal.todos)}`}
          proposal={item.proposal}
          head={item.text}
          onAnswer={onAnswerPlan}
        />
      )
  }
}

/** The reply as it streams: rendered at the pace React can keep up with, so a fast stream never blocks typing. */
function StreamingText({ text }: { text: string }) {
  const deferred = useDeferredValue(text)
  return (
    <div className="message-text">
      <Markdown text={deferred} />
    </div>
  )
}
