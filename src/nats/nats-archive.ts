import { type JetStreamClient, type JetStreamManager, jetstream } from '@nats-io/jetstream'
import { checkArchivedRun } from '../core/archive-check.js'
import { ARCHIVE_FORMAT, type ArchivedRun, type ArchiveSink } from '../core/archive-types.js'
import type { EventEnvelope } from '../core/envelope.js'
import type { Snapshot } from '../core/ports.js'
import {
  type NatsStreamOptions,
  open,
  runSubject,
  streamSession,
  subjectOf,
} from './nats-replica.js'

export interface NatsArchiveOptions extends NatsStreamOptions {
  /** The duplicate window of a stream the sink creates (default 2 min). */
  duplicateWindowMs?: number
  /** How long one publish waits for JetStream's acknowledgement (default 10 s). */
  publishTimeoutMs?: number
}

/** A trimmed log's snapshot, published before its first event. */
interface SnapshotMessage {
  skeinSnapshot: Snapshot
}

/** The last message stored on a subject (an event or a snapshot), or null. */
async function lastOn(jsm: JetStreamManager, stream: string, subject: string) {
  const message = await jsm.streams
    .getMessage(stream, { last_by_subj: subject })
    .catch((error: unknown) => {
      if (/no message found|not found/i.test(String((error as Error)?.message))) return null
      throw error
    })
  return message ? (message.json() as EventEnvelope | SnapshotMessage) : null
}

/**
 * The archive sink that publishes each run's log to a JetStream stream (docs/data-lifecycle.md,
 * "Archives"), on the subjects of the NATS replica (`<subject>.<runId>`, one message per event):
 * pointed at the replica's stream, a run the replica already holds up to its tail is archived
 * with nothing sent. Before publishing a run the sink reads the last message on its subject:
 * when it is one of this run's events, only the events after it are sent, so a sweep resumed
 * after a crash stores nothing twice. `write` resolves once JetStream acknowledged every message
 * (stored in the stream, file storage). A trimmed log's snapshot is published before its events.
 *
 * @example
 * retention: { finishedAfterMs, archive: natsArchive({ servers: '127.0.0.1:4222', stream: 'SKEIN' }) }
 */
export function natsArchive(options: NatsArchiveOptions): ArchiveSink & { close(): Promise<void> } {
  const { stream } = options
  const subject = subjectOf(options)
  const timeout = options.publishTimeoutMs ?? 10_000
  const session = streamSession(options, stream, subject)
  const connected = session.connected

  const publishRun = async (js: JetStreamClient, jsm: JetStreamManager, run: ArchivedRun) => {
    const to = runSubject(subject, run.runId)
    const last = await lastOn(jsm, stream, to)
    let from = 0
    if (last && 'seq' in last) {
      const mine = run.events[last.seq - run.head]
      if (mine && mine.id === last.id) from = last.seq - run.head + 1
    }
    const sends: Array<Promise<unknown>> = []
    if (from === 0 && run.snapshot) {
      const message: SnapshotMessage = { skeinSnapshot: run.snapshot }
      sends.push(
        js.publish(to, JSON.stringify(message), {
          msgID: `${run.runId}:snapshot:${run.snapshot.seq}:${run.events[0].id}`,
          timeout,
        }),
      )
    }
    for (const event of run.events.slice(from)) {
      sends.push(
        js.publish(to, JSON.stringify(event), {
          msgID: `${run.runId}:${event.seq}:${event.id}`,
          timeout,
        }),
      )
    }
    await Promise.all(sends)
  }

  return {
    name: `nats:${stream}`,
    async write(runs) {
      const { js, jsm } = await connected()
      await Promise.all(runs.map((run) => publishRun(js, jsm, run)))
    },
    close: session.close,
  }
}

/** What the reader keeps of one run id: its latest incarnation. */
interface Incarnation {
  snapshot: Snapshot | null
  events: Map<number, EventEnvelope>
}

/**
 * The archived runs of a stream (one run when `runId` is given), each checked whole, as
 * `restoreRun` takes them. A run id used again after its run was deleted has a new first event:
 * the latest incarnation is the one returned. A copy of an event already read is skipped.
 */
export async function readNatsArchive(
  options: NatsStreamOptions,
  runId?: string,
): Promise<ArchivedRun[]> {
  const subject = subjectOf(options)
  const filter = runId === undefined ? `${subject}.>` : runSubject(subject, runId)
  const { nc, close } = await open(options)
  const runs = new Map<string, Incarnation>()
  try {
    const js = jetstream(nc)
    const consumer = await js.consumers.get(options.stream, { filter_subjects: filter })
    let pending = (await consumer.info()).num_pending
    // A snapshot is published just before the first event of its (trimmed) run.
    const snapshotBefore = new Map<string, Snapshot>()
    while (pending > 0) {
      const messages = await consumer.fetch({ max_messages: 1_000, expires: 5_000 })
      let got = 0
      for await (const message of messages) {
        got++
        pending = message.info.pending
        const body = message.json<EventEnvelope | SnapshotMessage>()
        if ('skeinSnapshot' in body) {
          snapshotBefore.set(body.skeinSnapshot.runId, body.skeinSnapshot)
        } else {
          const snapshot = snapshotBefore.get(body.runId) ?? null
          snapshotBefore.delete(body.runId)
          const known = runs.get(body.runId)
          const held = known?.events.get(body.seq)
          if (held?.id === body.id) continue
          // Another event at a seq already held, a seq 1 or a fresh snapshot: a new run.
          if (!known || held || body.seq === 1 || snapshot) {
            runs.set(body.runId, { snapshot, events: new Map() })
          }
          runs.get(body.runId)!.events.set(body.seq, body)
        }
        if (pending === 0) break
      }
      if (got === 0)
        throw new Error(`readNatsArchive: stream "${options.stream}" stopped answering`)
    }
    await consumer.delete().catch(() => {})
  } finally {
    await close()
  }
  return [...runs].map(([id, { snapshot, events }]) => {
    const log = [...events.values()].sort((a, b) => a.seq - b.seq)
    return checkArchivedRun(
      {
        format: ARCHIVE_FORMAT,
        runId: id,
        head: log[0].seq,
        tail: log[log.length - 1].seq,
        status: null,
        kind: null,
        definitionName: null,
        archivedAt: log[log.length - 1].ts,
        events: log,
        snapshot,
      },
      `stream ${options.stream}, run ${id}`,
    )
  })
}
