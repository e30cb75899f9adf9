import { useEffect, useState } from 'react'
import { sentence, trustOfferWords } from '@keel/door/words'
import type { Api } from '../api.ts'
import type { TrustInfo } from '../../protocol.ts'

/**
 * The served folder's trust, offered the way the TUI asks before it starts: what the folder's files ask for, and two
 * numbered answers the person clicks on purpose. The words and the rule are the shared layer's (@keel/door/words,
 * @keel/settings); this only styles them. Text from the host is rendered as text (React escapes it).
 */
export function TrustOffer({ api }: { api: Api }) {
  const [info, setInfo] = useState<TrustInfo | null>(null)
  const [said, setSaid] = useState<string | null>(null)
  const [dismissed, setDismissed] = useState(false)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    api.call('trust.status', {}).then(setInfo, () => setInfo(null))
  }, [api])
  if (said)
    return (
      <div className="scope-banner" role="status" data-testid="trust-done">
        {sentence(said)}
      </div>
    )
  if (!info || info.trusted || !info.held.length || dismissed) return null
  const words = trustOfferWords(info.folder, info.held)
  return (
    <section className="approval trust-offer" data-testid="trust-offer" aria-label="Trust this folder?">
      <div className="approval-title">{sentence(words.title)}</div>
      <div className="approval-reason">{sentence(words.asks)}</div>
      <ul className="trust-files">
        {info.files.map((file) => (
          <li key={file}>
            <code>{file}</code>
          </li>
        ))}
      </ul>
      <div className="approval-reason">{words.means}</div>
      <div className="trust-choices">
        <button
          type="button"
          data-testid="trust-yes"
          onClick={() =>
            api.call('trust.grant', {}).then(
              (value) => {
                setInfo(value)
                setSaid(value.said)
              },
              (failure: Error) => setError(failure.message),
            )
          }
        >
          1. {words.trust}
        </button>
        <button type="button" data-testid="trust-no" onClick={() => setDismissed(true)}>
          2. {words.stay}
        </button>
      </div>
      {error && <div className="notice error">{error}</div>}
    </section>
  )
}
