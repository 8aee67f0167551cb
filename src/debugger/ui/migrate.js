// The run page's migration (docs/deploys.md, "Migrating runs"): pick another registered version
// of the run's definition, check it (a dry run, nothing written), then confirm to move the run.
// A refusal lists what differs; the move itself shows in the timeline as runtime.run.migrated.
import { useState } from 'preact/hooks'
import { api, describe, enc } from './api.js'
import { html } from './html.js'

const FINISHED = new Set(['completed', 'failed', 'cancelled'])

function Differences({ differences }) {
  if (!differences?.length) return null
  return html`<ul class="differences" aria-label="What differs">
    ${differences.map(
      (d) => html`<li key=${`${d.threadId ?? ''}${d.path}`}>
        <code>${d.path}</code>: run <code>${JSON.stringify(d.current)}</code>, target <code>${JSON.stringify(d.target)}</code> (${d.reason})
      </li>`,
    )}
  </ul>`
}

export function Migrate({ runId, state, defs, onDone }) {
  const versions = defs
    .filter(
      (d) =>
        d.kind === state.kind &&
        d.name === state.definitionName &&
        d.version !== state.definitionVersion,
    )
    .map((d) => d.version)
  const [target, setTarget] = useState('')
  const [step, setStep] = useState({ name: 'idle' })
  if (FINISHED.has(state.status) || versions.length === 0) return null
  const chosen = versions.includes(target) ? target : versions[versions.length - 1]
  const migrate = (dryRun) =>
    api(`/runs/${enc(runId)}/migrate`, { method: 'POST', body: { toVersion: chosen, dryRun } })
  const check = async () => {
    setStep({ name: 'busy' })
    try {
      const { migration } = await migrate(true)
      setStep({ name: 'confirm', migration })
    } catch (error) {
      setStep({ name: 'refused', error })
    }
  }
  const confirm = async () => {
    setStep({ name: 'busy' })
    try {
      const { migration } = await migrate(false)
      setStep({ name: 'done', migration })
      onDone?.()
    } catch (error) {
      setStep({ name: 'refused', error })
    }
  }
  return html`<span class="action migrate">
    <label>Version <select aria-label="Target version" value=${chosen}
      onChange=${(e) => {
        setTarget(e.currentTarget.value)
        setStep({ name: 'idle' })
      }}>
      ${versions.map((v) => html`<option key=${v} value=${v}>${v}</option>`)}
    </select></label>
    <button type="button" disabled=${step.name === 'busy'} onClick=${check}>Migrate…</button>
    ${
      step.name === 'confirm' &&
      html`<span class="confirm" role="status">
        ${`Dry run: ${runId} can move from ${step.migration.fromVersion} to ${step.migration.toVersion} (${step.migration.threadIds.length} thread(s)); nothing written yet.`}
        <button type="button" onClick=${confirm}>Confirm migration to ${step.migration.toVersion}</button>
        <button type="button" onClick=${() => setStep({ name: 'idle' })}>Cancel</button>
      </span>`
    }
    ${
      step.name === 'refused' &&
      html`<div class="error" role="alert">
        Migration refused: ${describe(step.error)}
        <${Differences} differences=${step.error.details?.differences} />
      </div>`
    }
    ${
      step.name === 'done' &&
      html`<span class="ok" role="status">Migrated to ${step.migration.toVersion}</span>`
    }
  </span>`
}
