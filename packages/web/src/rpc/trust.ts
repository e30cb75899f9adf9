// The page's trust card: the served folder's trust as @keel/settings' gate sees it, and the person's yes. The rule
// and its words are the shared layer's (@keel/settings, @keel/door/words); this only carries them.
import { trustedWords } from '@keel/door/words'
import { trustFolder, trustOffer } from '@keel/settings'
import type { Served } from '../served.ts'
import type { Method } from './method.ts'

function offer(served: Served) {
  return trustOffer(served.cwd, `${served.model.provider}/${served.model.model}`)
}

export const trustStatus: Method<'trust.status'> = (served) => offer(served)

export const trustGrant: Method<'trust.grant'> = (served) => {
  trustFolder(served.cwd)
  const now = offer(served)
  return { ...now, said: trustedWords(now.folder, true) }
}
