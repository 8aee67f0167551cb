// The Queues page: flow control's queues and keys (engine.queues(), GET /queues), live: read
// again every second while the page is open.
import { html } from './html.js'
import { usePolled } from './polled.js'

const REFRESH_MS = 1000
const wait = (ms) => (ms === null || ms === undefined ? '—' : `${(ms / 1000).toFixed(1)} s`)
const dash = (value) => (value === null || value === undefined ? '—' : String(value))

export function QueuesPage() {
  const { body, error } = usePolled('/queues', REFRESH_MS)
  const queues = body?.queues ?? null
  if (error && queues === null) return html`<div class="error-state" role="alert">${error}</div>`
  if (queues === null) return html`<p>Loading queues…</p>`
  return html`<h2>Queues</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      queues.length === 0
        ? html`<p>No queued or active runs.</p>`
        : html`<table aria-label="queues"><thead><tr><th>Queue</th><th>Key</th><th>Limit</th>
            <th>Active</th><th>Queued</th><th>Oldest wait</th></tr></thead><tbody>
          ${queues.map(
            (q) => html`<tr key=${`${q.queue}\n${q.key}`}>
              <td>${q.queue}</td><td>${q.key || '—'}</td><td>${dash(q.limit)}</td>
              <td>${q.active}</td><td>${q.queued}</td><td>${wait(q.oldestWaitMs)}</td></tr>`,
          )}
        </tbody></table>`
    }`
}
