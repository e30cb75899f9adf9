// Permission decisions (the `permission/decision` log event of @keel/permissions) as the page shows them. The words
// are @keel/permissions' own `describeDecision`, from its browser-safe entry; the transcript fold of @keel/door
// checks the event's data (`parseDecision`), because the log is read, not trusted.
import { describeDecision } from '@keel/permissions/decisions'
import type { SessionEventMap } from '@keel/session'

export { describeDecision }

/** The data of a `permission/decision` event. */
export type DecisionView = SessionEventMap['permission/decision']
