import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react'
import type { Notice } from '@keel/session'
import {
  type CommandInfo,
  MAX_NOTICES,
  type PermissionAnswer,
  type PermissionAsk,
  type PermissionMode,
  type PromptImage,
  type QueuedItem,
  type RewindDone,
  type SessionInfo,
} from '../protocol.ts'
import { ModeControl } from './components/ModeControl.tsx'
import { JobsBadge } from './components/JobsBadge.tsx'
import { TrustOffer } from './components/TrustOffer.tsx'
import { Api, ApiError, type StreamState } from './api.ts'
import { Composer } from './components/Composer.tsx'
import { askNotificationPermission, callBack, followNotifySettings, watchFocus } from './call-back.ts'
import { queuedLabel, sentence, TAKE_BACK, USER_COMMAND_USAGE, userCommandWords } from '@keel/door/words'
import type { QueueKind } from '@keel/agent'
import type { RewindActions } from './components/RewindCard.tsx'
import { SessionList } from './components/SessionList.tsx'
import type { PlanEdit, ProposalAnswer } from '@keel/todo/plan'
import type { AnswerPlan } from './components/ProposalCard.tsx'
import { type EditPlan, TodoPanel } from './components/TodoPanel.tsx'
import { UsageBadge } from './components/UsageBadge.tsx'
import { Transcript } from './components/Transcript.tsx'
import { ConversationStore, PAGE_MESSAGES } from './store.ts'
import { userCommandOf } from '@keel/door/shell-message'

function sessionFromHash(): string | null {
  const match = /^#s=([A-Za-z0-9_-]{1,128})$/.exec(window.location.hash)
  return match ? match[1]! : null
}

/** The end of a long path, where the project's name is. */
function shortPath(path: string, max = 34): string {
  return path.length > max ? `…${path.slice(-(max - 1))}` : path
}

/** `?messages=N` asks for smaller history pages (for trying paging on short sessions). */
function pageMessages(): number {
  const value = Number(new URL(window.location.href).searchParams.get('messages'))
  return Number.isInteger(value) && value >= 1 && value <= 500 ? value : PAGE_MESSAGES
}

export function App() {
  const [authorized, setAuthorized] = useState(true)
  if (!authorized) {
    return (
      <div className="gate" data-testid="gate">
        <h1>Keel</h1>
        <p>
          Open the address that <code>keel serve</code> printed: it carries this server&apos;s access token.
        </p>
      </div>
    )
  }
  return <Main onUnauthorized={() => setAuthorized(false)} />
}

function Main({ onUnauthorized }: { onUnauthorized: () => void }) {
  const api = useMemo(() => new Api(), [])
  const [mode, setMode] = useState<PermissionMode | null>(null)
  const [sessions, setSessions] = useState<SessionInfo[]>([])
  const [cwd, setCwd] = useState('')
  const [all, setAll] = useState(false)
  /** This machine's name in a shared store (its list holds other machines' sessions too). */
  const [host, setHost] = useState<string | undefined>(undefined)
  /** The plugins' notices of this run (an MCP server down, checkpoints off), from the event stream. */
  const [notices, setNotices] = useState<readonly Notice[]>([])
  const [selected, setSelected] = useState<string | null>(sessionFromHash)
  const [stream, setStream] = useState<StreamState>('connecting')
  const [error, setError] = useState<string | null>(null)
  /** What the last rewind did, shown until the next session is picked. */
  const [info, setInfo] = useState<string | null>(null)
  /** The prompt a conversation rewind went back before, put in the fork's composer. */
  const [draft, setDraft] = useState<{ text: string; before?: boolean } | null>(null)
  /** On narrow screens the session list is behind a button in the header. */
  const [navOpen, setNavOpen] = useState(false)
  const store = useMemo(
    () => (selected ? new ConversationStore(selected, api, { pageMessages: pageMessages() }) : null),
    [selected, api],
  )
  const storeRef = useRef(store)
  storeRef.current = store
  const selectedRef = useRef(selected)
  selectedRef.current = selected
  /** Each session's queued prompts (the agent's queue, from `agent/queue` frames), shown under the composer. */
  const [queues, setQueues] = useState<Record<string, QueuedItem[]>>({})
  const queuesRef = useRef(queues)
  queuesRef.current = queues
  useEffect(() => watchFocus(), [])

  const fail = useCallback(
    (err: unknown) => {
      if (err instanceof ApiError && err.code === 'unauthorized') onUnauthorized()
      else setError(err instanceof Error ? err.message : String(err))
    },
    [onUnauthorized],
  )

  const [commands, setCommands] = useState<CommandInfo[]>([])
  useEffect(() => {
    api.call('commands.list', {}).then((value) => setCommands(value.commands), fail)
  }, [api, fail])

  const refresh = useCallback(() => {
    api.call('session.list', {}).then((value) => {
      setSessions(value.sessions)
      setCwd(value.cwd)
      setAll(value.all)
      setHost(value.host)
    }, fail)
  }, [api, fail])

  useEffect(() => {
    refresh()
  }, [refresh])
  useEffect(() => {
    void store?.open()
  }, [store])

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const refreshSoon = () => {
      clearTimeout(timer)
      timer = setTimeout(refresh, 150)
    }
    const close = api.events(
      (frame) => {
        if (frame.type === 'permission/mode') setMode(frame.mode)
        if (frame.type === 'agent/queue') setQueues((queues) => ({ ...queues, [frame.sessionId]: frame.items }))
        if (frame.type === 'permission/ask')
          callBack({ kind: 'approval', sessionId: frame.ask.sessionId, summary: frame.ask.summary })
        if (
          frame.type === 'session/event' &&
          frame.event.type === 'turn/end' &&
          frame.sessionId === selectedRef.current &&
          (frame.event.data.reason === 'aborted' ||
            !queuesRef.current[frame.sessionId]?.some((item) => item.kind === 'follow-up'))
        )
          callBack({ kind: 'turn-end', sessionId: frame.sessionId, reason: frame.event.data.reason })
        storeRef.current?.accept(frame)
        // The list again on each connection's hello too: a session made elsewhere while this tab was not connected
        // (its page loading, a dropped connection) was announced to nobody here.
        if (frame.type === 'session/created' || frame.type === 'agent/status' || frame.type === 'hello') refreshSoon()
        if (frame.type === 'hello') {
          setNotices(frame.notices ?? [])
          followNotifySettings(frame.notify)
        } else if (frame.type === 'notice') setNotices((shown) => [...shown, frame.notice].slice(-MAX_NOTICES))
      },
      setStream,
      onUnauthorized,
    )
    return () => {
      clearTimeout(timer)
      close()
    }
  }, [api, refresh, onUnauthorized])

  useEffect(() => {
    const onHash = () => setSelected(sessionFromHash())
    window.addEventListener('hashchange', onHash)
    // The first render read the address before this listener existed: a `#s=` that arrived in between (a link
    // opened into this tab while it loaded) fired its hashchange to no one, so read the address again now.
    onHash()
    return () => window.removeEventListener('hashchange', onHash)
  }, [])

  const select = useCallback((id: string) => {
    setError(null)
    setInfo(null)
    if (window.location.hash !== `#s=${id}`) window.location.hash = `s=${id}`
    setSelected(id)
    setNavOpen(false)
  }, [])

  const create = useCallback(async (): Promise<string | null> => {
    try {
      const { session } = await api.call('session.create', {})
      select(session.id)
      refresh()
      return session.id
    } catch (err) {
      fail(err)
      return null
    }
  }, [api, select, refresh, fail])

  // A `!command` runs on the host through the bash tool (@keel/door/user-command), as in the TUI.
  const [commandRunning, setCommandRunning] = useState(false)
  const send = useCallback(
    async (text: string, images: PromptImage[] = [], kind: QueueKind = 'steer'): Promise<boolean> => {
      setError(null)
      askNotificationPermission()
      const command = userCommandOf(text)
      if (command === '') {
        setError(USER_COMMAND_USAGE)
        return false
      }
      const id = selected ?? (await create())
      if (!id) return false
      if (command !== undefined) {
        setCommandRunning(true)
        try {
          const result = await api.call('session.shell', { sessionId: id, command })
          if (!result.ran) setError(sentence(userCommandWords(command, { refused: result.reason }).text))
          refresh()
          return true
        } catch (err) {
          fail(err)
          return false
        } finally {
          setCommandRunning(false)
        }
      }
      try {
        await api.call('session.prompt', { sessionId: id, text, kind, ...(images.length ? { images } : {}) })
        refresh()
        return true
      } catch (err) {
        fail(err)
        return false
      }
    },
    [api, selected, create, refresh, fail],
  )

  // A queued prompt comes back into the composer, before what is typed there (the TUI's Alt+Up); if it was delivered
  // meanwhile there is nothing to take and the queue frame already dropped it.
  const takeBack = useCallback(
    async (id: string) => {
      if (!selected) return
      try {
        const { taken } = await api.call('queue.remove', { sessionId: selected, id })
        if (taken) setDraft({ text: taken.text, before: true })
      } catch (err) {
        fail(err)
      }
    },
    [api, selected, fail],
  )

  const cancel = useCallback(() => {
    if (selected) api.call('session.cancel', { sessionId: selected }).catch(fail)
  }, [api, selected, fail])

  // Any tab may answer; when another tab (or a cancelled turn) got there first the card just goes.
  const answer = useCallback(
    async (ask: PermissionAsk, value: PermissionAnswer): Promise<void> => {
      try {
        const { accepted } = await api.call('permission.answer', {
          sessionId: ask.sessionId,
          callId: ask.callId,
          ...value,
        })
        if (!accepted) storeRef.current?.dropAsk(ask.sessionId, ask.callId)
      } catch (err) {
        fail(err)
      }
    },
    [api, fail],
  )

  const rewind = useMemo<RewindActions | undefined>(() => {
    if (!selected) return undefined
    return {
      preview: (seq, scope) => api.call('session.rewindPreview', { sessionId: selected, seq, scope }),
      rewind: (seq, scope, overwrite) =>
        api.call('session.rewind', { sessionId: selected, seq, scope, ...(overwrite.length ? { overwrite } : {}) }),
      done: (result: RewindDone, prompt: string) => {
        const files = result.changed
          ? `Rewound ${result.changed} file${result.changed === 1 ? '' : 's'} to the start of turn ${result.turn}.`
          : ''
        refresh()
        if (result.fork) {
          select(result.fork.id)
          setDraft({ text: prompt })
          setInfo(
            `${files} Continuing in a fork of session ${selected.slice(0, 8)} made before turn ${result.turn}.`.trim(),
          )
        } else {
          setInfo(files || 'No files changed.')
        }
      },
    }
  }, [api, selected, select, refresh])

  // The person's plan edits and proposal answers: the host refuses what breaks a rule, and the card shows the rule.
  const plan = useMemo(() => {
    if (!selected) return undefined
    const refusal = (err: unknown) => (err instanceof ApiError && err.code === 'bad-request' ? err.message : undefined)
    const run = async (call: () => Promise<unknown>): Promise<string | undefined> => {
      try {
        await call()
        return undefined
      } catch (err) {
        const refused = refusal(err)
        if (refused) return refused
        fail(err)
        return undefined
      }
    }
    return {
      edit: (edit: PlanEdit) => run(() => api.call('plan.edit', { sessionId: selected, edit })),
      answer: (answer: ProposalAnswer) => run(() => api.call('plan.answer', { sessionId: selected, answer })),
    }
  }, [api, selected, fail])

  const title = sessions.find((session) => session.id === selected)?.title
  /** The machine running the open session, when a shared store's session runs on another one. */
  const elsewhere = sessions.find((session) => session.id === selected)?.host
  const runsOn = host && elsewhere && elsewhere !== host ? elsewhere : undefined
  return (
    <div className={navOpen ? 'app nav-open' : 'app'}>
      <aside className="sidebar" id="sidebar">
        <div className="brand">
          <span className="brand-name">Keel</span>
          <span
            className={`stream-state ${stream}`}
            title={stream === 'open' ? 'live' : stream === 'connecting' ? 'connecting…' : 'disconnected'}
          />
        </div>
        <div className="cwd" title={cwd}>
          {shortPath(cwd)}
        </div>
        {all && (
          <div className="scope-banner" role="status" data-testid="all-banner">
            Serving the sessions of every working directory (<code>--all</code>); each runs in its own directory.
          </div>
        )}
        <TrustOffer api={api} />
        {notices.length > 0 && (
          <div className="scope-banner notice-banner" role="status" data-testid="notice-banner">
            {notices.map((notice, i) => (
              // Notices have no id and repeat; their order is all there is.
              // biome-ignore lint/suspicious/noArrayIndexKey: an append-only list, never reordered
              <div key={i} className={`notice-line ${notice.level}`} data-testid="notice-line">
                {notice.text}
              </div>
            ))}
          </div>
        )}
        <SessionList
          sessions={sessions}
          selected={selected}
          all={all}
          host={host}
          onSelect={select}
          onCreate={() => void create()}
        />
      </aside>
      <main className="main">
        <header className="conversation-header">
          <button
            type="button"
            className="nav-toggle"
            data-testid="nav-toggle"
            aria-controls="sidebar"
            aria-expanded={navOpen}
            onClick={() => setNavOpen(!navOpen)}
          >
            <span className="nav-icon" aria-hidden="true" />
            <span className="visually-hidden">Sessions</span>
          </button>
          <span className="conversation-title">{selected ? title || 'New session' : 'Keel'}</span>
          {selected && (
            <span className="conversation-id" title={selected}>
              {selected.slice(0, 8)}
            </span>
          )}
          {runsOn && (
            <span
              className="conversation-host"
              data-testid="conversation-host"
              title={`This session runs on ${runsOn}`}
            >
              on {runsOn}
            </span>
          )}
          <ModeControl api={api} sessionId={selected} mode={mode} onMode={setMode} />
          {store && <UsageBadge store={store} />}
          {store && <JobsBadge store={store} />}
        </header>
        {store ? (
          <Conversation
            store={store}
            error={error}
            info={info}
            draft={draft}
            rewind={rewind}
            commandRunning={commandRunning}
            onSend={send}
            onCancel={cancel}
            onAnswer={answer}
            commands={commands}
            plan={plan}
            queued={queues[selected ?? ''] ?? []}
            onTakeBack={takeBack}
          />
        ) : (
          <>
            <div className="transcript">
              <div className="transcript-inner">
                <div className="placeholder">Start a new session, or pick one on the left.</div>
              </div>
            </div>
            <div className="dock">
              {error && <div className="notice error">{error}</div>}
              <Composer running={false} disabled={false} onSend={send} onCancel={cancel} commands={commands} />
            </div>
          </>
        )}
      </main>
    </div>
  )
}

function Conversation({
  store,
  error,
  info,
  draft,
  rewind,
  commandRunning,
  onSend,
  onCancel,
  onAnswer,
  commands,
  plan,
  queued,
  onTakeBack,
}: {
  commands: readonly CommandInfo[]
  store: ConversationStore
  /** The person's `!command` runs: the button stops it. */
  commandRunning: boolean
  error: string | null
  info: string | null
  draft: { text: string; before?: boolean } | null
  rewind?: RewindActions
  onSend: (text: string, images: PromptImage[], kind?: QueueKind) => Promise<boolean>
  onCancel: () => void
  onAnswer: (ask: PermissionAsk, answer: PermissionAnswer) => Promise<void>
  plan?: { edit: EditPlan; answer: AnswerPlan }
  queued: readonly QueuedItem[]
  onTakeBack: (id: string) => void
}) {
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot)
  return (
    <>
      <Transcript
        snapshot={snapshot}
        onLoadOlder={() => void store.loadOlder()}
        onAnswer={onAnswer}
        rewind={rewind}
        onAnswerPlan={plan?.answer}
      />
      <div className="dock">
        <TodoPanel todos={snapshot.todos} onEdit={plan?.edit} />
        {info && (
          <div className="notice" role="status" data-testid="rewind-info">
            {info}
          </div>
        )}
        {error && (
          <div className="notice error" role="alert">
            {error}
          </div>
        )}
        {queued.length > 0 && (
          <ul className="queued" data-testid="queued">
            {queued.map((item) => (
              <li key={item.id} data-testid="queued-item" data-kind={item.kind}>
                <span className="queued-kind">{sentence(queuedLabel(item.kind))}</span> {item.text}{' '}
                <button
                  type="button"
                  className="queued-take"
                  data-testid="queued-take"
                  onClick={() => onTakeBack(item.id)}
                >
                  {TAKE_BACK}
                </button>
              </li>
            ))}
          </ul>
        )}
        <Composer
          running={snapshot.running || commandRunning}
          disabled={snapshot.openState !== 'open'}
          onSend={onSend}
          onCancel={onCancel}
          draft={draft}
          commands={commands}
        />
      </div>
    </>
  )
}
