// Time travel: the state just before and just after one event, from `GET /runs/:id/replay`
// (the server folds the log to that point; nothing is executed).
import { useEffect, useState } from 'preact/hooks'
import { api, describe, enc } from './api.js'
import { pretty } from './format.js'
import { html } from './html.js'

function changes(before, after) {
  const out = []
  if (before.status !== after.status) out.push(`run: ${before.status} → ${after.status}`)
  for (const [id, thread] of Object.entries(after.threads ?? {})) {
    const was = before.threads?.[id]?.status ?? 'absent'
    if (was !== thread.status) out.push(`thread ${id}: ${was} → ${thread.status}`)
  }
  return out
}

export function Inspector({ runId, seq, onClose }) {
  const [step, setStep] = useState(undefined)
  const [error, setError] = useState(null)
  useEffect(() => {
    let live = true
    setStep(undefined)
    setError(null)
    api(`/runs/${enc(runId)}/replay?seq=${seq}`)
      .then((answer) => live && setStep(answer.step))
      .catch((e) => live && setError(e))
    return () => {
      live = false
    }
  }, [runId, seq])

  return html`<section class="inspector" aria-labelledby="inspector-title">
    <div class="section-head">
      <h2 id="inspector-title">Time travel: event ${seq}</h2>
      <button type="button" onClick=${onClose}>Close</button>
    </div>
    ${error && html`<p class="error" role="alert">Replay failed: ${describe(error)}</p>`}
    ${step === undefined && !error && html`<p aria-busy="true">Replaying…</p>`}
    ${step === null && html`<p>Event ${seq} is no longer in the log (trimmed after a snapshot), so it cannot be replayed.</p>`}
    ${
      step &&
      html`<p class="event-type"><strong>${step.event.type}</strong>${step.event.threadId ? ` on ${step.event.threadId}` : ''}</p>
        <ul class="changes" aria-label="What this event changed">
          ${changes(step.before, step.after).map((c) => html`<li>${c}</li>`)}
        </ul>
        <details open><summary>Event</summary><pre>${pretty(step.event)}</pre></details>
        <div class="before-after">
          <div class="state-before"><h3>State before</h3><pre>${pretty(step.before)}</pre></div>
          <div class="state-after"><h3>State after</h3><pre>${pretty(step.after)}</pre></div>
        </div>`
    }
  </section>`
}
