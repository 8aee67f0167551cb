import type { EventEnvelope } from '../../core/envelope.js'
import { type Backoff, backoffAfter } from '../../core/retry.js'
import { hintListeners } from '../shared/hint-listeners.js'

/** Reconnecting the LISTEN connection after it is lost. */
const RECONNECT: Backoff = { initialMs: 100, maxMs: 5000 }

/** A dedicated connection that LISTENs (a `pg` Client, or a client checked out of a pg Pool). */
export interface ListenConnection {
  query(text: string): Promise<unknown>
  on(event: 'notification', listener: (message: { payload?: string }) => void): unknown
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown
  /** Gives the connection up (ends it, or returns it to its pool destroyed). */
  close(): Promise<void>
}

export interface ChangeFeedOptions {
  /** The schema's NOTIFY channel (schema.ts `notifyChannel`). */
  channel: string
  /** Opens the LISTEN connection; without it the feed only polls. */
  connect?: () => Promise<ListenConnection>
  /** Tails of these runs (missing runs left out). */
  readTails(runIds: string[]): Promise<Array<{ runId: string; tail: number }>>
  /** The run's events from `fromSeq` on. */
  readEvents(runId: string, fromSeq: number): Promise<EventEnvelope[]>
  /** Hands a batch to the run's in-process listeners. */
  deliver(runId: string, events: readonly EventEnvelope[]): void
  /** Polls the watched runs' tails this often (a lost notification only delays). */
  pollIntervalMs: number
  /** A read or connection failure (the feed retries on its own). */
  onError(error: unknown): void
}

/** The payload a worker task enqueue notifies with (a run's hint is `<tail> <run id>`). */
export const WORKER_TASKS_HINT = 'worker-tasks'

/** Quoted for LISTEN: the channel is built from a validated schema name (no quotes inside). */
const listenSql = (channel: string) => `LISTEN "${channel}"`

/**
 * The events other processes append, delivered to this process's `subscribe` listeners
 * (docs/storage.md, "Several processes on one schema": SSE and wake-ups on any host). Every append's transaction sends
 * `pg_notify(channel, '<tail> <run id>')`; one LISTEN connection per store hears them, and
 * for a run with listeners whose tail moved past what they have seen, the feed reads the new
 * events from the store and delivers them, in seq order, each once. The notification is only
 * a hint: while runs are watched, their tails are also polled every `pollIntervalMs`, and
 * at once after the LISTEN connection comes back, so a lost notification only delays.
 *
 * This process's own commits are delivered straight from the group commit (`local`), with no
 * read; the feed only fills what another process wrote. Per run it keeps `known`, the last
 * seq delivered: a local batch that would leave a hole (another host appended in between and
 * its hint has not arrived yet) makes the feed read the hole first.
 */
export function createChangeFeed(options: ChangeFeedOptions) {
  /** Watched runs: the last seq their listeners saw, null until the first tail read. */
  const known = new Map<string, number | null>()
  /** Runs being read, and whether another hint arrived meanwhile. */
  const reading = new Map<string, { again: boolean }>()
  let connection: ListenConnection | undefined
  let connecting = false
  let reconnects = 0
  let pollTimer: NodeJS.Timeout | undefined
  let reconnectTimer: NodeJS.Timeout | undefined
  let stopped = false
  /** Worker task claims waiting for a task: told of every `WORKER_TASKS_HINT`. */
  const taskHints = hintListeners({ first: () => listen() })

  const deliverFrom = (runId: string, events: readonly EventEnvelope[]) => {
    const seen = known.get(runId)
    if (seen === undefined || events.length === 0) return
    const from = seen ?? events[0].seq - 1
    const fresh = events.filter((e) => e.seq > from)
    if (fresh.length === 0) return
    known.set(runId, fresh[fresh.length - 1].seq)
    options.deliver(runId, fresh)
  }

  /** Reads and delivers everything past `known` (one read at a time per run). */
  const catchUp = (runId: string): void => {
    const busy = reading.get(runId)
    if (busy) {
      busy.again = true
      return
    }
    const state = { again: false }
    reading.set(runId, state)
    const step = async () => {
      do {
        state.again = false
        const seen = known.get(runId)
        if (seen === undefined || seen === null) break
        const events = await options.readEvents(runId, seen + 1)
        deliverFrom(runId, events)
      } while (state.again && !stopped)
    }
    step()
      .catch(options.onError)
      .finally(() => reading.delete(runId))
  }

  const hint = (runId: string, tail: number) => {
    const seen = known.get(runId)
    if (seen !== undefined && seen !== null && tail > seen) catchUp(runId)
  }

  const poll = async () => {
    const ids = [...known.keys()]
    if (ids.length === 0) return
    for (const { runId, tail } of await options.readTails(ids)) {
      const seen = known.get(runId)
      if (seen !== null) {
        hint(runId, tail)
        continue
      }
      // The watcher's own first tail read failed (an outage) or has not answered: this tail may
      // be past events appended since it subscribed, which nothing would deliver (a run that
      // then waits for its listener's reaction waits forever). Its last event is delivered:
      // a listener skips a seq it has and reads a hole from the log (docs/storage.md).
      known.set(runId, Math.max(0, tail - 1))
      if (tail > 0) catchUp(runId)
    }
  }
  const pollSoon = () => void poll().catch(options.onError)

  const onNotification = ({ payload }: { payload?: string }) => {
    if (payload === WORKER_TASKS_HINT) return taskHints.notify()
    if (!payload || payload === '*') return pollSoon()
    const space = payload.indexOf(' ')
    if (space < 0) return pollSoon()
    hint(payload.slice(space + 1), Number(payload.slice(0, space)))
  }

  const scheduleReconnect = () => {
    if (stopped || reconnectTimer || (known.size === 0 && taskHints.size === 0)) return
    const delay = backoffAfter(++reconnects, RECONNECT)
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined
      listen()
    }, delay)
    reconnectTimer.unref?.()
  }

  const listen = () => {
    if (stopped || connecting || connection || !options.connect) return
    connecting = true
    const lost = (c: ListenConnection) => (error?: Error) => {
      if (error) options.onError(error)
      if (connection !== c) return
      connection = undefined
      c.close().catch(() => {})
      scheduleReconnect()
    }
    options
      .connect()
      .then(async (c) => {
        c.on('notification', onNotification)
        c.on('error', lost(c))
        c.on('end', lost(c))
        try {
          await c.query(listenSql(options.channel))
        } catch (error) {
          await c.close().catch(() => {})
          throw error
        }
        if (stopped) return c.close()
        connection = c
        reconnects = 0
        // Whatever was appended or enqueued while nobody listened.
        pollSoon()
        taskHints.notify()
      })
      .catch((error) => {
        options.onError(error)
        scheduleReconnect()
      })
      .finally(() => {
        connecting = false
      })
  }

  const startPolling = () => {
    if (pollTimer || stopped) return
    pollTimer = setInterval(pollSoon, options.pollIntervalMs)
    pollTimer.unref?.()
  }

  return {
    /** A run got its first listener: start following it. */
    watch(runId: string): void {
      if (stopped || known.has(runId)) return
      known.set(runId, null)
      listen()
      startPolling()
      options
        .readTails([runId])
        .then(([row]) => {
          if (known.get(runId) === null) known.set(runId, row?.tail ?? 0)
          else if (row) hint(runId, row.tail)
        })
        .catch(options.onError)
    },
    /** The run's last listener left. */
    unwatch(runId: string): void {
      known.delete(runId)
      if (known.size === 0 && pollTimer) {
        clearInterval(pollTimer)
        pollTimer = undefined
      }
    },
    /** A batch this process committed. */
    local(runId: string, events: readonly EventEnvelope[]): void {
      const seen = known.get(runId)
      if (seen === undefined || events.length === 0) return
      if (seen !== null && events[0].seq > seen + 1) return catchUp(runId)
      deliverFrom(runId, events)
    },
    /** Hints of worker tasks enqueued by any host (`WorkerTaskStore.watch`). */
    watchTasks: (listener: () => void) => taskHints.watch(listener),
    /** Whether the LISTEN connection is up (tests and status). */
    listening: () => connection !== undefined,
    async close(): Promise<void> {
      stopped = true
      known.clear()
      if (pollTimer) clearInterval(pollTimer)
      if (reconnectTimer) clearTimeout(reconnectTimer)
      const c = connection
      connection = undefined
      await c?.close().catch(() => {})
    },
  }
}
