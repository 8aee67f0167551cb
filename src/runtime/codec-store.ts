import type { EventEnvelope } from '../core/envelope.js'
import {
  type CodecContext,
  decodeEvent,
  encodeEvent,
  type PayloadCodec,
} from '../core/payload-codec.js'
import type {
  EventStore,
  FeedEntry,
  FlowStore,
  ProjectionFeed,
  Snapshot,
  SnapshotStore,
  StoredWorkerTask,
  WorkerTask,
  WorkerTaskStore,
} from '../core/ports.js'

const taskContext = (t: WorkerTask): CodecContext => ({
  part: 'task',
  runId: t.runId,
  id: `${t.effectId}:${t.attempt}`,
})

const decodeEvents = (codec: PayloadCodec, events: readonly EventEnvelope[]) =>
  events.map((e) => decodeEvent(codec, e))

/**
 * The store the engine works with when `createEngine({ codec })` is given (docs/data-lifecycle.md,
 * "Payloads encrypted at rest"): event payloads, snapshot data, worker task inputs and debounce
 * windows' inputs are encoded on their way in and decoded on their way out, so the store below
 * (and its files, rows and caches) holds only what the codec wrote. Ids, types, seqs, times and run meta pass as they are.
 * Every member the store has is kept, and only those, so its capabilities stay true.
 */
export function codecStore(store: EventStore, codec: PayloadCodec): EventStore {
  const wrapped: EventStore = {
    ...bindAll(store),
    append: (runId, events, options) =>
      store.append(
        runId,
        events.map((e) => encodeEvent(codec, e)),
        options,
      ),
    read: async (runId, options) => decodeEvents(codec, await store.read(runId, options)),
  }
  const subscribe = store.subscribe?.bind(store)
  if (subscribe)
    wrapped.subscribe = (runId, listener) =>
      subscribe(runId, (events) => listener(decodeEvents(codec, events)))
  if (store.snapshots)
    (wrapped as { snapshots?: SnapshotStore }).snapshots = codecSnapshots(store.snapshots, codec)
  const restoreTrimmed = store.restoreTrimmed?.bind(store)
  if (restoreTrimmed)
    wrapped.restoreTrimmed = (runId, log) =>
      restoreTrimmed(runId, {
        ...log,
        events: log.events.map((e) => encodeEvent(codec, e)),
        snapshot: {
          ...log.snapshot,
          data: codec.encode(log.snapshot.data, snapshotContext(log.snapshot)),
        },
      })
  if (store.feed) (wrapped as { feed?: ProjectionFeed }).feed = codecFeed(store.feed, codec)
  if (store.flow) (wrapped as { flow?: FlowStore }).flow = codecFlow(store.flow, codec)
  if (store.workerTasks)
    (wrapped as { workerTasks?: WorkerTaskStore }).workerTasks = codecTasks(
      store.workerTasks,
      codec,
    )
  return wrapped
}

/** What a snapshot's data is encoded and decoded with. */
export const snapshotContext = (s: Snapshot): CodecContext => ({
  part: 'snapshot',
  runId: s.runId,
  id: String(s.seq),
})

/** Snapshot data encoded whole: a snapshot holds the run's folded state, payloads included. */
export function codecSnapshots(snapshots: SnapshotStore, codec: PayloadCodec): SnapshotStore {
  const context = snapshotContext
  return {
    save: (s) => snapshots.save({ ...s, data: codec.encode(s.data, context(s)) }),
    async latest(runId, atOrBefore, options) {
      const s = await snapshots.latest(runId, atOrBefore, options)
      if (!s || !codec.encoded(s.data)) return s
      return { ...s, data: codec.decode(s.data, context(s)) }
    },
    list: (runId) => snapshots.list(runId),
    prune: (runId, keep) => snapshots.prune(runId, keep),
  }
}

function codecFeed(feed: ProjectionFeed, codec: PayloadCodec): ProjectionFeed {
  return {
    ...bindAll(feed),
    readAfter: async (...page) =>
      (await feed.readAfter(...page)).map((entry): FeedEntry => {
        const event = decodeEvent(codec, entry.event)
        return event === entry.event ? entry : { ...entry, event }
      }),
  }
}

/** A debounce window's last input: a start's input, kept in the store until the run starts. */
const DEBOUNCE: CodecContext = { part: 'debounce', runId: '', id: '' }

function codecFlow(flow: FlowStore, codec: PayloadCodec): FlowStore {
  return {
    ...bindAll(flow),
    debounce: (request) =>
      flow.debounce({ ...request, input: codec.encode(request.input, DEBOUNCE) }),
    async admission(runId) {
      const admission = await flow.admission(runId)
      if (admission?.input === undefined || !codec.encoded(admission.input)) return admission
      return { ...admission, input: codec.decode(admission.input, DEBOUNCE) }
    },
  }
}

function codecTasks(tasks: WorkerTaskStore, codec: PayloadCodec): WorkerTaskStore {
  const decode = (stored: StoredWorkerTask): StoredWorkerTask =>
    codec.encoded(stored.task.input)
      ? {
          ...stored,
          task: {
            ...stored.task,
            input: codec.decode(stored.task.input, taskContext(stored.task)),
          },
        }
      : stored
  return {
    ...bindAll(tasks),
    shared: tasks.shared,
    enqueue: (list, now) =>
      tasks.enqueue(
        list.map((t) => ({ ...t, input: codec.encode(t.input, taskContext(t)) })),
        now,
      ),
    claim: async (query) => (await tasks.claim(query)).map(decode),
    list: async (runId) => (await tasks.list(runId)).map(decode),
  }
}

/**
 * The object's members, its methods bound to it (a store may be a class instance whose methods
 * live on its prototype, or keep getters such as `shared`), so a wrapper can spread them.
 */
function bindAll<T extends object>(target: T): T {
  const out: Record<string, unknown> = {}
  const seen = new Set<string>()
  for (let o: object | null = target; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (name === 'constructor' || seen.has(name)) continue
      seen.add(name)
      const value = (target as Record<string, unknown>)[name]
      out[name] = typeof value === 'function' ? value.bind(target) : value
    }
  }
  return out as T
}
