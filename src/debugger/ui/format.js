// Renderings shared by the pages. Payloads can be huge: text is cut before it reaches the DOM.
const briefs = new WeakMap()

export const time = (ms) =>
  typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString().replace('T', ' ') : '-'

/** One line of JSON, at most `max` characters (cached per object: rows re-render often). */
export function brief(value, max = 140) {
  if (value !== null && typeof value === 'object' && briefs.has(value)) return briefs.get(value)
  let text
  try {
    text = JSON.stringify(value) ?? ''
  } catch {
    text = String(value)
  }
  const out = text.length > max ? `${text.slice(0, max - 1)}…` : text
  if (value !== null && typeof value === 'object') briefs.set(value, out)
  return out
}

/** Indented JSON, cut at `max` characters with a note saying how much was left out. */
export function pretty(value, max = 20_000) {
  let text
  try {
    text = JSON.stringify(value, null, 2) ?? 'undefined'
  } catch {
    text = String(value)
  }
  if (text.length <= max) return text
  return `${text.slice(0, max)}\n… (${(text.length - max).toLocaleString('en')} more characters)`
}

export const STATUS_LABEL = {
  queued: 'queued',
  running: 'running',
  waiting: 'waiting',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  done: 'done',
  skipped: 'skipped',
  pending: 'pending',
}
