// The tables and their migrations, created and upgraded by Keel itself: a list of versions, each applied once in
// order inside one transaction, under a transaction-scoped advisory lock so two processes starting together do not
// race. A database whose schema is newer than this Keel knows is refused: an older Keel must not write to it.
import type { SyncPg } from './bridge.ts'

/** Advisory lock key of the migration step (any constant other than a session's lock namespace). */
const MIGRATION_LOCK = 4_040_404_040

const MIGRATIONS: readonly string[] = [
  // 1: sessions and their events. The primary key (session_id, seq) refuses a duplicate; the trigger refuses an
  // event that does not follow the last one (a gap), keeps the session's title and update time, and announces the
  // event (delivered at commit) for `keel serve --store` on other machines.
  `CREATE TABLE keel_sessions (
     id text PRIMARY KEY,
     cwd text NOT NULL,
     host text NOT NULL,
     created_at bigint NOT NULL,
     updated_at bigint NOT NULL,
     next_seq integer NOT NULL DEFAULT 0,
     title text,
     writer text,
     header json NOT NULL
   );
   CREATE INDEX keel_sessions_by_cwd ON keel_sessions (cwd, host);
   CREATE TABLE keel_events (
     session_id text NOT NULL REFERENCES keel_sessions (id) ON DELETE CASCADE,
     seq integer NOT NULL CHECK (seq >= 0),
     type text NOT NULL,
     event json NOT NULL,
     PRIMARY KEY (session_id, seq)
   );
   CREATE FUNCTION keel_event_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE
     expected integer;
     prompt text;
   BEGIN
     SELECT next_seq INTO expected FROM keel_sessions WHERE id = NEW.session_id FOR UPDATE;
     IF expected IS NULL THEN
       RAISE EXCEPTION 'no session %', NEW.session_id USING ERRCODE = 'foreign_key_violation';
     END IF;
     IF NEW.seq <> expected THEN
       RAISE EXCEPTION 'event seq % of session % does not follow the last one (the log holds % events)',
         NEW.seq, NEW.session_id, expected USING ERRCODE = 'unique_violation';
     END IF;
     IF NEW.type = 'user/message' AND coalesce(NEW.event #>> '{data,message,source}', 'user') = 'user' THEN
       SELECT coalesce(string_agg(block ->> 'text', ''), '') INTO prompt
         FROM json_array_elements(NEW.event #> '{data,message,content}') AS block WHERE block ->> 'type' = 'text';
     END IF;
     UPDATE keel_sessions SET next_seq = NEW.seq + 1, updated_at = (NEW.event ->> 'time')::bigint,
       title = coalesce(title, left(btrim(regexp_replace(prompt, '\\s+', ' ', 'g')), 120))
       WHERE id = NEW.session_id;
     PERFORM pg_notify('keel_events', NEW.session_id || ' ' || NEW.seq);
     RETURN NEW;
   END $$;
   CREATE TRIGGER keel_event_in_order BEFORE INSERT ON keel_events
     FOR EACH ROW EXECUTE FUNCTION keel_event_in_order();`,
  // 2: the approvals a running session waits for, so a page on another machine can show and answer them. The process
  // that runs the session writes the ask (host, pid) and settles it; another machine may write one answer (the first
  // wins: only while `answer` is null); the owner applies it and says whether it decided the ask (`taken`). Every
  // change is announced on `keel_asks` as '<session id> <call id>'.
  `CREATE TABLE keel_asks (
     session_id text NOT NULL REFERENCES keel_sessions (id) ON DELETE CASCADE,
     call_id text NOT NULL,
     page_id text NOT NULL,
     host text NOT NULL,
     pid integer NOT NULL,
     asked_at bigint NOT NULL,
     ask json NOT NULL,
     answer json,
     answered_from text,
     settled boolean NOT NULL DEFAULT false,
     taken boolean,
     PRIMARY KEY (session_id, call_id)
   );
   CREATE INDEX keel_asks_waiting ON keel_asks (page_id) WHERE NOT settled;
   CREATE FUNCTION keel_ask_changed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM pg_notify('keel_asks', NEW.session_id || ' ' || NEW.call_id);
     RETURN NULL;
   END $$;
   CREATE TRIGGER keel_ask_changed AFTER INSERT OR UPDATE ON keel_asks
     FOR EACH ROW EXECUTE FUNCTION keel_ask_changed();`,
  // 3: an answer from another process counts only with a proof (src/approval.ts): the owner's random nonce per ask,
  // and the HMAC the answering door wrote beside its answer. A Keel without this step refuses the schema, so no owner
  // that would take an unproven answer runs on it. And while a process holds a session (its advisory lock), no other
  // connection appends to its log: an event forged into a running session (a `session` allow its resume would fold
  // back in) is refused, whoever connects. A connection that holds the lock is granted the transaction's lock again.
  `ALTER TABLE keel_asks ADD COLUMN nonce text, ADD COLUMN proof text;
   CREATE OR REPLACE FUNCTION keel_event_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE
     expected integer;
     prompt text;
   BEGIN
     SELECT next_seq INTO expected FROM keel_sessions WHERE id = NEW.session_id FOR UPDATE;
     IF expected IS NULL THEN
       RAISE EXCEPTION 'no session %', NEW.session_id USING ERRCODE = 'foreign_key_violation';
     END IF;
     IF NEW.seq <> expected THEN
       RAISE EXCEPTION 'event seq % of session % does not follow the last one (the log holds % events)',
         NEW.seq, NEW.session_id, expected USING ERRCODE = 'unique_violation';
     END IF;
     IF NOT pg_try_advisory_xact_lock(hashtextextended(NEW.session_id, 40)) THEN
       RAISE EXCEPTION 'session % is held by another process: only it appends to the log', NEW.session_id
         USING ERRCODE = 'lock_not_available';
     END IF;
     IF NEW.type = 'user/message' AND coalesce(NEW.event #>> '{data,message,source}', 'user') = 'user' THEN
       SELECT coalesce(string_agg(block ->> 'text', ''), '') INTO prompt
         FROM json_array_elements(NEW.event #> '{data,message,content}') AS block WHERE block ->> 'type' = 'text';
     END IF;
     UPDATE keel_sessions SET next_seq = NEW.seq + 1, updated_at = (NEW.event ->> 'time')::bigint,
       title = coalesce(title, left(btrim(regexp_replace(prompt, '\\s+', ' ', 'g')), 120))
       WHERE id = NEW.session_id;
     PERFORM pg_notify('keel_events', NEW.session_id || ' ' || NEW.seq);
     RETURN NEW;
   END $$;`,
]

export const SCHEMA_VERSION = MIGRATIONS.length

export class SchemaError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SchemaError'
  }
}

/** Brings the database to SCHEMA_VERSION, or refuses (one line) a schema newer than this Keel. */
export function migrate(db: SyncPg, where: string): void {
  const current = db.call<number>({ kind: 'migrate', lockKey: MIGRATION_LOCK, migrations: MIGRATIONS })
  if (current > SCHEMA_VERSION)
    throw new SchemaError(
      `the session store ${where} has Keel schema version ${current}; this Keel knows up to version ${SCHEMA_VERSION} (upgrade Keel)`,
    )
}
