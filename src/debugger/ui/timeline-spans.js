// Where a run spent its time: its events folded into rows of spans on one time axis. Pure data
// (no DOM), so the run timeline only draws it. Rows: the run, each child thread, each workflow
// node, each effect (one span per attempt, with the backoff and queueing between them) and each
// wait (timers say when they fire). A row still open at the end of the log runs to `now`.

/** The event types the timeline reads (`GET /runs/:id/events?types=`). */
export const TIMELINE_TYPES = [
  'runtime.run.*',
  'runtime.thread.*',
  'runtime.wait.*',
  'runtime.effect.*',
  'workflow.node.*',
].join(',')

const RUN_END = {
  'runtime.run.completed': 'completed',
  'runtime.run.failed': 'failed',
  'runtime.run.cancelled': 'cancelled',
}
const THREAD_END = {
  'runtime.thread.completed': 'completed',
  'runtime.thread.failed': 'failed',
  'runtime.thread.cancelled': 'cancelled',
}
const NODE_END = {
  'workflow.node.finished': 'done',
  'workflow.node.failed': 'failed',
  'workflow.node.skipped': 'skipped',
}
const ATTEMPT_END = {
  'runtime.effect.completed': 'completed',
  'runtime.effect.timed_out': 'timed_out',
  'runtime.effect.ambiguous': 'ambiguous',
  'runtime.effect.cancelled': 'cancelled',
}

/** "sleeping until …", "waiting for approval.decided", "waiting on its wait URL". */
export function describeWait(on, time) {
  if (on?.timer) return `sleeping until ${time(on.timer.at)}`
  if (on?.event) return `waiting for ${on.event.type}`
  if (on?.url) return 'waiting on its wait URL'
  return 'waiting'
}

/**
 * `events`: the run's events of TIMELINE_TYPES in seq order. `now`: where open spans end.
 * Returns `{ start, end, rows }`; each row `{ id, kind, label, threadId, depth, status,
 * from, to, open, segments: [{ from, to, status, label }] }`, in the order they began.
 */
export function buildTimeline(events, now, time) {
  const rows = new Map()
  const depth = new Map()
  let start = events.length > 0 ? events[0].ts : now
  const row = (id, kind, label, threadId, at) => {
    let r = rows.get(id)
    if (!r) {
      r = { id, kind, label, threadId, depth: depth.get(threadId) ?? 0, status: 'running' }
      r.from = at
      r.to = undefined
      r.segments = []
      rows.set(id, r)
    }
    return r
  }
  const close = (r, at, status) => {
    if (!r) return
    r.to = at
    r.status = status
    const last = r.segments[r.segments.length - 1]
    if (last && last.to === undefined) {
      last.to = at
      if (last.status === 'running' || last.status === 'waiting') last.status = status
    }
  }
  const open = (r, at, status, label) => {
    const last = r.segments[r.segments.length - 1]
    if (last && last.to === undefined) last.to = at
    r.segments.push({ from: at, to: undefined, status, label })
  }

  for (const event of events) {
    const p = event.payload ?? {}
    const at = event.ts
    const type = event.type
    if (type === 'runtime.run.started') {
      start = Math.min(start, at)
      const r = row('run', 'run', `run ${p.definitionName}@${p.definitionVersion}`, null, at)
      open(r, at, 'running', 'running')
      depth.set(p.rootThreadId, 0)
    } else if (type === 'runtime.run.queued' || type === 'runtime.run.admitted') {
      // Flow control: the time a run waited for its queue is its own span.
      const r = rows.get('run') ?? row('run', 'run', 'run', null, at)
      if (type === 'runtime.run.queued') open(r, at, 'queued', `queued (${p.queue})`)
      else open(r, at, 'running', 'running')
    } else if (RUN_END[type]) {
      close(rows.get('run'), at, RUN_END[type])
    } else if (type === 'runtime.thread.started') {
      if (p.parentThreadId === null) continue
      depth.set(p.threadId, (depth.get(p.parentThreadId) ?? 0) + 1)
      const r = row(
        `thread:${p.threadId}`,
        'child',
        `child ${p.definitionName}`,
        p.parentThreadId,
        at,
      )
      r.detail = p.threadId
      open(r, at, 'running', 'running')
    } else if (THREAD_END[type]) {
      close(rows.get(`thread:${p.threadId}`), at, THREAD_END[type])
    } else if (type === 'workflow.node.started') {
      const id = `node:${event.threadId}:${p.nodeId}`
      // A node started again (an operator retry reopened it) keeps one row with a new span.
      const r = row(id, 'node', `node ${p.nodeId}`, event.threadId, at)
      r.status = 'running'
      r.to = undefined
      const directive = p.directive?.$directive
      open(r, at, 'running', typeof directive === 'string' ? directive : 'running')
    } else if (NODE_END[type]) {
      const id = `node:${event.threadId}:${p.nodeId}`
      const r = rows.get(id) ?? row(id, 'node', `node ${p.nodeId}`, event.threadId, at)
      if (r.segments.length === 0) open(r, at, NODE_END[type], NODE_END[type])
      close(r, at, NODE_END[type])
    } else if (type === 'runtime.effect.requested') {
      const r = row(`effect:${p.effectId}`, 'effect', `effect ${p.type}`, p.threadId, at)
      r.detail = p.effectId
      r.attempts = 0
    } else if (type === 'runtime.effect.attempt.started' || type === 'runtime.effect.dispatched') {
      const r = rows.get(`effect:${p.effectId}`)
      if (!r) continue
      const last = r.segments[r.segments.length - 1]
      // A worker's attempt.started follows its dispatch: the same attempt goes on.
      if (last?.attempt === p.attempt && last.to === undefined) continue
      open(r, at, 'running', `attempt ${p.attempt}`)
      r.segments[r.segments.length - 1].attempt = p.attempt
      r.attempts = Math.max(r.attempts, p.attempt)
      r.status = 'running'
    } else if (type === 'runtime.effect.failed') {
      const r = rows.get(`effect:${p.effectId}`)
      if (!r) continue
      if (p.final) close(r, at, p.reason === 'timeout' ? 'timed_out' : 'failed')
      else endSegment(r, at, 'failed')
    } else if (ATTEMPT_END[type]) {
      close(rows.get(`effect:${p.effectId}`), at, ATTEMPT_END[type])
    } else if (type === 'runtime.effect.retry.scheduled') {
      const r = rows.get(`effect:${p.effectId}`)
      if (!r) continue
      r.status = 'running'
      r.to = undefined
      const label = p.reason === 'operator' ? 'retried by an operator' : 'backoff'
      open(r, at, 'backoff', label)
    } else if (type === 'runtime.effect.queued') {
      const r = rows.get(`effect:${p.effectId}`)
      if (r) open(r, at, 'queued', `queued (${p.reason})`)
    } else if (type === 'runtime.wait.registered') {
      const r = row(`wait:${p.waitId}`, 'wait', describeWait(p.on, time), p.threadId, at)
      open(r, at, 'waiting', r.label)
    } else if (type === 'runtime.wait.satisfied') {
      close(rows.get(`wait:${p.waitId}`), at, p.timedOut ? 'timed_out' : 'done')
    }
  }

  const list = [...rows.values()]
  let end = start
  for (const r of list) {
    r.open = r.to === undefined
    if (r.open) r.to = now
    for (const s of r.segments) if (s.to === undefined) s.to = now
    end = Math.max(end, r.to)
  }
  // The run first, then everything else in the order it began.
  list.sort((a, b) => (a.kind === 'run' ? -1 : b.kind === 'run' ? 1 : a.from - b.from))
  return { start, end, rows: list }
}

/** Ends the open segment of a row that stays open (a failed attempt that will be retried). */
function endSegment(r, at, status) {
  const last = r.segments[r.segments.length - 1]
  if (last && last.to === undefined) {
    last.to = at
    last.status = status
  }
}

/** "830 ms", "4.2 s", "3 min 5 s", "2 h 10 min". */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '-'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
  const s = Math.round(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
}
