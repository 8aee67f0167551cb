// The Schedules page: every schedule with its next fire times, counters and last runs, and
// pause/resume (operations access: a token that opens it, or the host's own policy).
import { useEffect, useState } from 'preact/hooks'
import { api, enc } from './api.js'
import { html } from './html.js'

const when = (at) => (at === null || at === undefined ? '—' : new Date(at).toLocaleString())
const rule = (spec) =>
  spec.cron !== null ? `${spec.cron} (${spec.timezone})` : `every ${spec.every / 1000} s`

function Schedule({ schedule, onChanged }) {
  const [error, setError] = useState('')
  const toggle = async () => {
    setError('')
    const verb = schedule.paused ? 'resume' : 'pause'
    try {
      await api(`/schedules/${enc(schedule.name)}/${verb}`, { method: 'POST' })
      onChanged()
    } catch (failure) {
      setError(`${failure.code ?? 'ERROR'}: ${failure.message}`)
    }
  }
  const s = schedule.state
  return html`<section class="schedule" aria-label=${`schedule ${schedule.name}`}>
    <h3>${schedule.name} ${schedule.paused ? html`<span class="badge">paused</span>` : ''}</h3>
    <p>${rule(schedule.spec)} → ${schedule.spec.start.kind} ${schedule.spec.start.definitionName};
      overlap ${schedule.spec.overlap}, catch-up ${schedule.spec.catchUp}</p>
    <p>Next: ${schedule.upcoming.length ? schedule.upcoming.map(when).join(' · ') : '—'}</p>
    <p>Started ${s.started}, skipped ${s.skipped}, missed ${s.missed}${
      s.lastError
        ? html` · last error: <code>${s.lastError.code}</code> ${s.lastError.message}`
        : ''
    }</p>
    <button type="button" onClick=${toggle}>${schedule.paused ? 'Resume' : 'Pause'}</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      s.recent.length > 0 &&
      html`<table><thead><tr><th>Last runs</th><th>Why</th><th>Started</th></tr></thead><tbody>
        ${s.recent.map(
          (r) => html`<tr key=${r.runId}>
            <td><a href=${`#/runs/${enc(r.runId)}`}>${r.runId}</a></td>
            <td>${r.reason}</td><td>${when(r.startedAt)}</td></tr>`,
        )}
      </tbody></table>`
    }
  </section>`
}

export function SchedulesPage() {
  const [schedules, setSchedules] = useState(null)
  const [error, setError] = useState('')
  const [generation, setGeneration] = useState(0)
  useEffect(() => {
    const controller = new AbortController()
    api('/schedules', { signal: controller.signal }).then(
      (body) => setSchedules(body.schedules),
      (failure) => {
        if (failure.name !== 'AbortError')
          setError(`${failure.code ?? 'ERROR'}: ${failure.message}`)
      },
    )
    return () => controller.abort()
  }, [generation])
  const refresh = () => setGeneration((g) => g + 1)
  if (error) return html`<div class="error-state" role="alert">${error}</div>`
  if (schedules === null) return html`<p>Loading schedules…</p>`
  return html`<h2>Schedules</h2>
    ${schedules.length === 0 ? html`<p>No schedules.</p>` : ''}
    ${schedules.map((s) => html`<${Schedule} key=${s.name} schedule=${s} onChanged=${refresh} />`)}`
}
