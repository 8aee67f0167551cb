// The run page's actions that change what runs: Cancel, offered only where the host serves the
// opt-in cancel route, and "Re-run from here", a fork of the run at one of its workflow nodes
// (docs/operating-runs.md, "Fork"). Both need operations access; a refusal is shown as is.
import { useEffect, useState } from 'preact/hooks'
import { api, capabilities, describe, enc } from './api.js'
import { html } from './html.js'

const TERMINAL = new Set(['completed', 'failed', 'cancelled'])

/** Cancel in two steps: the first asks to confirm. Hidden where the host serves no cancel route. */
export function CancelRun({ runId, status, onDone }) {
  const [served, setServed] = useState(false)
  const [step, setStep] = useState({ phase: 'idle' })
  useEffect(() => {
    let active = true
    capabilities().then((c) => active && setServed(c.cancel === true))
    return () => {
      active = false
    }
  }, [])
  if (!served || (TERMINAL.has(status) && step.phase !== 'done')) return null
  const cancel = async () => {
    setStep({ phase: 'busy' })
    try {
      await api(`/runs/${enc(runId)}/cancel`, { method: 'POST' })
      setStep({ phase: 'done' })
      onDone?.()
    } catch (error) {
      setStep({ phase: 'idle', error })
    }
  }
  return html`<span class="action">
    ${
      step.phase === 'confirm' || step.phase === 'busy'
        ? html`<button type="button" disabled=${step.phase === 'busy'} onClick=${cancel}>Confirm cancel</button>
          <button type="button" disabled=${step.phase === 'busy'} onClick=${() => setStep({ phase: 'idle' })}>Keep running</button>`
        : step.phase === 'idle' &&
          html`<button type="button" onClick=${() => setStep({ phase: 'confirm' })}>Cancel run</button>`
    }
    ${step.phase === 'done' && html`<span class="ok" role="status">Cancel: done</span>`}
    ${step.error && html`<span class="error" role="alert">Cancel refused: ${describe(step.error)}</span>`}
  </span>`
}

/**
 * "Re-run from here": a new run with this run's log up to the chosen node, which runs again
 * with the code deployed now, with what follows it. Opens the new run.
 */
export function ForkFromNode({ runId, nodes }) {
  const [node, setNode] = useState(nodes[0])
  const [state, setState] = useState({ busy: false })
  if (nodes.length === 0) return null
  const chosen = nodes.includes(node) ? node : nodes[0]
  const fork = async () => {
    setState({ busy: true })
    try {
      const forked = await api(`/runs/${enc(runId)}/fork`, {
        method: 'POST',
        body: { atNode: chosen },
      })
      location.hash = `#/runs/${enc(forked.runId)}`
    } catch (error) {
      setState({ busy: false, error })
    }
  }
  return html`<span class="action fork">
    <label for="fork-node">Node</label>
    <select id="fork-node" value=${chosen} onChange=${(e) => setNode(e.currentTarget.value)}>
      ${nodes.map((id) => html`<option key=${id} value=${id}>${id}</option>`)}
    </select>
    <button type="button" disabled=${state.busy} onClick=${fork}>Re-run from here</button>
    ${state.error && html`<span class="error" role="alert">Re-run refused: ${describe(state.error)}</span>`}
  </span>`
}

/** "Forked from <run> at seq n": a fork's start records its source (docs/operating-runs.md). */
export function ForkedFrom({ runId }) {
  const [from, setFrom] = useState(null)
  useEffect(() => {
    let active = true
    api(`/runs/${enc(runId)}/events?fromSeq=1&limit=1`)
      .then((r) => active && setFrom(r.events[0]?.payload?.forkedFrom ?? null))
      .catch(() => {})
    return () => {
      active = false
    }
  }, [runId])
  if (!from) return null
  const source = html`<a href=${`#/runs/${enc(from.runId)}`}><code>${from.runId}</code></a>`
  return html`<p class="forked-from" data-testid="forked-from">Forked from ${source} at seq ${from.atSeq}</p>`
}
