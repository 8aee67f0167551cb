import type { EventEnvelope } from '../core/envelope.js'
import type { CodecContext, PayloadCodec } from '../core/payload-codec.js'
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
import { decodeEvents, encodeEvents, missingHolders } from '../core/sealed-batches.js'

const taskContext = (t: WorkerTask): CodecContext => ({
  part: 'task',
  runId: t.runId,
  id: `${t.effectId}:${t.attempt}`,
})

/**
 * The events decoded, with the batch holders they point at and do not hold read from the store
 * (a page cut inside a batch: one more row, docs/data-lifecycle.md, "Payloads encrypted at rest").
 */
async function decodeRead(
  store: EventStore,
  codec: PayloadCodec,
  events: readonly EventEnvelope[],
): Promise<EventEnvelope[]> {
  const missing = missingHolders(codec, events)
  if (missing.length === 0) return decodeEvents(codec, events)
  const holders = await Promise.all(
    missing.map(async ({ runId, seq }) => (await store.read(runId, { fromSeq: seq, limit: 1 }))[0]),
  )
  return decodeEvents(
    codec,
    events,
    holders.filter((e) => e !== undefined),
  )
}

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
    // One seal per append (decisions.md, "One seal per appended batch, kept on its last event").
    append: (runId, events, options) => store.append(runId, encodeEvents(codec, events), options),
    read: async (runId, options) => decodeRead(store, codec, await store.read(runId, options)),
  }
  const subscribe = store.subscribe?.bind(store)
  if (subscribe)
    wrapped.subscribe = (runId, listener) => {
      // A commit arrives whole, so its batches' holders come with it; a delivery cut inside a
      // batch waits for the holder's read, and later deliveries queue behind it, in order.
      let queue: Promise<void> | undefined
      return subscribe(runId, (events) => {
        if (!queue && missingHolders(codec, events).length === 0)
          return listener(decodeEvents(codec, events))
        const next = (queue ?? Promise.resolve())
          .then(async () => listener(await decodeRead(store, codec, events)))
          .catch((error) =>
            console.error(
              `skein codec store: events of run ${runId} could not be delivered`,
              error,
            ),
          )
          .finally(() => {
            if (queue === next) queue = undefined
          })
        queue = next
      })
    }
  if (store.snapshots)
    (wrapped as { snapshots?: SnapshotStore }).snapshots = codecSnapshots(store.snapshots, codec)
  const restoreTrimmed = store.restoreTrimmed?.bind(store)
  if (restoreTrimmed)
    wrapped.restoreTrimmed = (runId, log) =>
      restoreTrimmed(runId, {
        ...log,
        events: encodeEvents(codec, log.events),
        snapshot: {
          ...log.snapshot,
          data: codec.encode(log.snapshot.data, snapshotContext(log.snapshot)),
        },
      })
  if (store.feed) (wrapped as { feed?: ProjectionFeed }).feed = codecFeed(store, store.feed, codec)
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

function codecFeed(store: EventStore, feed: ProjectionFeed, codec: PayloadCodec): ProjectionFeed {
  return {
    ...bindAll(feed),
    async readAfter(...page) {
      const entries = await feed.readAfter(...page)
      const events = await decodeRead(
        store,
        codec,
        entries.map((entry) => entry.event),
      )
      return entries.map((entry, i): FeedEntry => {
        const event = events[i] as EventEnvelope
        return event === entry.event ? entry : { ...entry, event }
      })
    },
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
