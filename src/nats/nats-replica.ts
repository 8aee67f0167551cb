import {
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  StorageType,
} from '@nats-io/jetstream'
import { connect, type NatsConnection, nanos } from '@nats-io/transport-node'
import type { EventEnvelope } from '../core/envelope.js'
import { decodeEvent, encodeEvent, type PayloadCodec } from '../core/payload-codec.js'
import {
  defineProjector,
  type ProjectorContext,
  type ProjectorDefinition,
} from '../core/projector.js'
import { RUN_DELETED } from '../core/run-deletion.js'

/** Where the replica lives: a NATS server (or a connection you own) and a JetStream stream. */
export interface NatsStreamOptions {
  /** NATS server(s), e.g. `'127.0.0.1:4222'`. Ignored when `connection` is given. */
  servers?: string | string[]
  /** A connection you manage (never closed by the replica). */
  connection?: NatsConnection
  /** The JetStream stream's name. */
  stream: string
  /**
   * Subject prefix: run `r`'s events go to `<subject>.<r>` (run ids with a `.` are
   * encoded, see `runSubject`). Default `skein.<stream>`, so two replicas never overlap.
   */
  subject?: string
  /**
   * For `readReplicatedLog(s)`: the codec the engine's store uses, so payloads read decoded
   * (docs/data-lifecycle.md). Without it they are returned as the stream holds them.
   */
  codec?: PayloadCodec
}

export interface NatsReplicaOptions extends NatsStreamOptions {
  /** The projector's name (names its checkpoint). Default `nats.<stream>`. */
  name?: string
  /**
   * The duplicate window of a stream the replica creates (default 2 min): a message id
   * `runId:seq` published again within it is dropped by JetStream. An existing stream keeps
   * its own settings.
   */
  duplicateWindowMs?: number
  /** Publishes awaiting their acknowledgement at once (default 1,024). */
  maxInFlight?: number
  /** How long one publish waits for JetStream's acknowledgement (default 10 s). */
  publishTimeoutMs?: number
}

/** A projector that replicates the log to JetStream; `close()` drains its own connection. */
export interface NatsReplica extends ProjectorDefinition {
  readonly stream: string
  readonly subject: string
  /** Resolves once every message handed over is stored; rejects with the first failure. */
  flush(ctx?: ProjectorContext): Promise<void>
  close(): Promise<void>
}

const PLAIN_RUN_ID = /^[A-Za-z0-9_:-]{1,200}$/

/**
 * The subject a run's events are published on. Plain run ids are used as they are; any other
 * (dots, spaces, wildcards, non-ASCII, very long) is `~` + base64url of its UTF-8 bytes, which no
 * plain id can collide with.
 */
export function runSubject(subject: string, runId: string): string {
  const token = PLAIN_RUN_ID.test(runId)
    ? runId
    : `~${Buffer.from(runId, 'utf8').toString('base64url')}`
  return `${subject}.${token}`
}

/** The subject prefix of a stream's options (default `skein.<stream>`). */
export const subjectOf = (options: NatsStreamOptions) =>
  options.subject ?? `skein.${options.stream}`

/** Opens (or reuses) a connection; the returned `close` closes only what it opened. */
export async function open(options: NatsStreamOptions) {
  if (options.connection) return { nc: options.connection, close: async () => {} }
  if (!options.servers) throw new TypeError('natsReplica: give `servers` or `connection`')
  const nc = await connect({ servers: options.servers, name: 'skein' })
  return { nc, close: () => nc.drain() }
}

/** Creates the stream when it is missing; refuses one that does not capture our subjects. */
export async function ensureStream(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  duplicateWindowMs: number,
): Promise<void> {
  const wanted = `${subject}.>`
  const info = await jsm.streams.info(stream).catch((error: unknown) => {
    if ((error as { name?: string })?.name === 'StreamNotFoundError') return null
    if (/not found/i.test(String((error as Error)?.message))) return null
    throw error
  })
  if (!info) {
    await jsm.streams.add({
      name: stream,
      subjects: [wanted],
      storage: StorageType.File,
      duplicate_window: nanos(duplicateWindowMs),
    })
    return
  }
  const subjects = info.config.subjects ?? []
  if (!subjects.includes(wanted) && !subjects.includes('>')) {
    throw new Error(
      `natsReplica: stream "${stream}" captures ${JSON.stringify(subjects)}, not "${wanted}": pass its subject prefix as \`subject\``,
    )
  }
}

/**
 * One lazily opened connection to a stream (created when missing) shared by a sink's calls: a
 * failed connect is tried again by the next call; `close` ends it.
 */
export function streamSession(
  options: NatsStreamOptions & { duplicateWindowMs?: number },
  stream: string,
  subject: string,
) {
  let session:
    | Promise<{ js: JetStreamClient; jsm: JetStreamManager; close: () => Promise<void> }>
    | undefined
  return {
    connected() {
      session ??= (async () => {
        const { nc, close } = await open(options)
        try {
          const jsm = await jetstreamManager(nc)
          await ensureStream(jsm, stream, subject, options.duplicateWindowMs ?? 120_000)
          return { js: jetstream(nc), jsm, close }
        } catch (error) {
          await close().catch(() => {})
          throw error
        }
      })()
      session.catch(() => {
        session = undefined
      })
      return session
    },
    async close() {
      const current = session
      session = undefined
      if (current) await (await current.catch(() => undefined))?.close()
    },
  }
}

/**
 * A post-commit projector (`createEngine({ projectors: [natsReplica(...)] })`) that publishes
 * every run's events, in seq order, to a NATS JetStream stream, one message per event: subject
 * `<subject>.<runId>`, data the envelope's JSON, message id `runId:seq`. A batch delivered again
 * (after a crash, before the checkpoint moved) is dropped by JetStream's duplicate window; a
 * duplicate that arrives after the window is skipped by `readReplicatedLog` (first copy of each
 * seq wins). The stream is created when missing (file storage, `duplicateWindowMs`).
 *
 * @example
 * const replica = natsReplica({ servers: '127.0.0.1:4222', stream: 'SKEIN' })
 * const engine = createEngine({ store, projectors: [replica] })
 * // elsewhere: const log = await readReplicatedLog({ servers, stream: 'SKEIN' }, runId)
 */
export function natsReplica(options: NatsReplicaOptions): NatsReplica {
  const stream = options.stream
  const subject = subjectOf(options)
  const maxInFlight = options.maxInFlight ?? 1024
  const timeout = options.publishTimeoutMs ?? 10_000
  const session = streamSession(options, stream, subject)
  const connected = session.connected

  // Publishes sent and not yet acknowledged (each settles, never rejects), and the first
  // failure among them since the last flush.
  let inflight: Array<Promise<void>> = []
  let failure: unknown
  const settleInflight = async () => {
    const waiting = inflight
    inflight = []
    await Promise.all(waiting)
  }

  const projector = defineProjector({
    name: options.name ?? `nats.${stream}`,
    // Sends, in seq order on one connection; the acknowledgements are awaited by `flush` (the
    // projector runtime calls it before its checkpoint moves), at most `maxInFlight` at a time.
    async handle({ runId, events }, ctx) {
      const { js } = await connected()
      const to = runSubject(subject, runId)
      for (const event of events) {
        // A deletion is not replicated: the replica keeps the run (its archive copy).
        if (event.type === RUN_DELETED) continue
        // With an engine codec the stream holds what the store holds: encoded payloads.
        const stored = ctx.codec ? encodeEvent(ctx.codec, event) : event
        const sent = js.publish(to, JSON.stringify(stored), {
          msgID: `${runId}:${event.seq}`,
          timeout,
        })
        inflight.push(
          sent.then(
            () => {},
            (error) => {
              failure ??= error
            },
          ),
        )
        if (inflight.length >= maxInFlight) await settleInflight()
      }
    },
    // Every message handed over so far is stored (or a duplicate JetStream dropped); otherwise
    // throws, and the runtime delivers the round again (the ids make that harmless).
    async flush() {
      await settleInflight()
      if (failure !== undefined) {
        const error = failure
        failure = undefined
        throw error
      }
    },
  })
  return Object.freeze({
    ...projector,
    stream,
    subject,
    close: session.close,
  }) as NatsReplica
}

/**
 * Rebuilds one run's log from the stream: its events in seq order, each seq once (the first
 * copy wins). A log that ends early or has a gap means the replica is behind.
 */
export async function readReplicatedLog(
  options: NatsStreamOptions,
  runId: string,
): Promise<EventEnvelope[]> {
  const logs = await readStream(options, runSubject(subjectOf(options), runId))
  return logs.get(runId) ?? []
}

/** Rebuilds every run's log in the stream (one pass over it), by runId. */
export function readReplicatedLogs(
  options: NatsStreamOptions,
): Promise<Map<string, EventEnvelope[]>> {
  return readStream(options, `${subjectOf(options)}.>`)
}

async function readStream(
  options: NatsStreamOptions,
  filter: string,
): Promise<Map<string, EventEnvelope[]>> {
  const { nc, close } = await open(options)
  const bySeq = new Map<string, Map<number, EventEnvelope>>()
  try {
    const js = jetstream(nc)
    // An ordered consumer: no state on the server beyond the read, gaps re-fetched by the client.
    const consumer = await js.consumers.get(options.stream, { filter_subjects: filter })
    let pending = (await consumer.info()).num_pending
    while (pending > 0) {
      const messages = await consumer.fetch({ max_messages: 1_000, expires: 5_000 })
      let got = 0
      for await (const message of messages) {
        got++
        const copy = message.json<EventEnvelope>()
        const event = options.codec ? decodeEvent(options.codec, copy) : copy
        let seqs = bySeq.get(event.runId)
        if (!seqs) bySeq.set(event.runId, (seqs = new Map()))
        if (!seqs.has(event.seq)) seqs.set(event.seq, event)
        pending = message.info.pending
        if (pending === 0) break
      }
      if (got === 0)
        throw new Error(`readReplicatedLog: stream "${options.stream}" stopped answering`)
    }
    await consumer.delete().catch(() => {})
  } finally {
    await close()
  }
  const logs = new Map<string, EventEnvelope[]>()
  for (const [runId, seqs] of bySeq)
    logs.set(
      runId,
      [...seqs.values()].sort((a, b) => a.seq - b.seq),
    )
  return logs
}
