// The run page's panels: approvals, effects, threads, conversation and evaluations.
import { useEffect, useState } from 'preact/hooks'
import { api, capabilities, describe, enc } from './api.js'
import { brief, time } from './format.js'
import { html } from './html.js'

/** A button that calls the API and reports the server's answer (or its error) next to it. */
export function ActionButton({ label, describedBy, run, onDone }) {
  const [state, setState] = useState({ busy: false })
  const click = async () => {
    setState({ busy: true })
    try {
      await run()
      setState({ busy: false, done: true })
      onDone?.()
    } catch (error) {
      setState({ busy: false, error })
    }
  }
  return html`<span class="action">
    <button type="button" disabled=${state.busy} aria-describedby=${describedBy} onClick=${click}>${label}</button>
    ${state.error && html`<span class="error" role="alert">${label} refused: ${describe(state.error)}</span>`}
    ${state.done && html`<span class="ok" role="status">${label}: done</span>`}
  </span>`
}

export function Approvals({ runId, items, onChange }) {
  const pending = items.filter((i) => i.status === 'pending')
  if (pending.length === 0) return null
  const decide = (item, outcome) => () =>
    api(`/runs/${enc(runId)}/events`, {
      method: 'POST',
      body: {
        events: [
          {
            type: 'approval.decided',
            payload: { approvalId: item.approvalId, outcome, name: 'debugger' },
          },
        ],
      },
    })
  return html`<section class="approvals" aria-labelledby="approvals-title">
    <h2 id="approvals-title">Pending approvals</h2>
    <ul>
      ${pending.map((item, i) => {
        const id = `approval-${i}`
        return html`<li key=${item.approvalId}>
          <span id=${id} class="approval-title">${item.title}</span>
          <small> (${item.approvalId})</small>
          <${ActionButton} label="Approve" describedBy=${id} run=${decide(item, 'approve')} onDone=${onChange} />
          <${ActionButton} label="Reject" describedBy=${id} run=${decide(item, 'reject')} onDone=${onChange} />
        </li>`
      })}
    </ul>
  </section>`
}

/** Effects that failed for good and wait for an operator (no deadline: nothing will happen). */
const FAILED_FOR_GOOD = new Set(['failed', 'ambiguous', 'timed_out'])

/** Whether the host's operations routes can be opened (unknown until its capabilities are read). */
function useOperations() {
  const [operations, setOperations] = useState(undefined)
  useEffect(() => {
    let active = true
    capabilities().then((c) => active && setOperations(c.operations !== false))
    return () => {
      active = false
    }
  }, [])
  return operations
}

function EffectTable({ runId, caption, effects, failed, operations, onChange }) {
  // Retry is an operations route: without an authorize hook the host refuses it, so it is not offered.
  const retry = failed && operations === true
  return html`<table data-effects=${failed ? 'failed' : 'open'}><caption>${caption}</caption>
    <thead><tr><th scope="col">Effect</th><th scope="col">Type</th><th scope="col">Attempt</th><th scope="col">Status</th>${!failed && html`<th scope="col">Deadline</th>`}<th scope="col">Last error</th>${retry && html`<th scope="col">Action</th>`}</tr></thead>
    <tbody>${effects.map((e) => {
      const id = `effect-${e.effectId}`
      return html`<tr key=${e.effectId} data-effect-id=${e.effectId}>
        <td id=${id}>${e.effectId}</td><td>${e.type}</td><td>${e.attempt}</td>
        <td><span class=${`badge status-${e.status}`}>${e.status}</span></td>
        ${!failed && html`<td>${time(e.deadlineAt)}</td>`}
        <td>${e.lastError ? `${e.lastError.code}: ${e.lastError.message}` : ''}</td>
        ${
          retry &&
          html`<td><${ActionButton} label="Retry" describedBy=${id} onDone=${onChange}
            run=${() => api(`/runs/${enc(runId)}/effects/${enc(e.effectId)}/retry`, { method: 'POST' })} /></td>`
        }
      </tr>`
    })}</tbody>
  </table>`
}

/**
 * Effects still in flight (with their deadlines), effects that failed for good (with Retry when
 * the host has operations routes), and every recorded attempt.
 */
export function Effects({ runId, open, attempts, onChange }) {
  const operations = useOperations()
  if (open.length === 0 && attempts.length === 0) return null
  const failed = open.filter((e) => FAILED_FOR_GOOD.has(e.status))
  const inFlight = open.filter((e) => !FAILED_FOR_GOOD.has(e.status))
  return html`<section class="effects" aria-labelledby="effects-title">
    <h2 id="effects-title">Effects</h2>
    ${
      failed.length > 0 &&
      html`<${EffectTable} runId=${runId} caption="Failed effects (an operator may retry them)"
        effects=${failed} failed=${true} operations=${operations} onChange=${onChange} />`
    }
    ${
      operations === false &&
      failed.length > 0 &&
      html`<p class="note">Retry is an operations route, disabled on this host (it has no authorize hook).</p>`
    }
    ${
      inFlight.length > 0 &&
      html`<${EffectTable} runId=${runId} caption="Open effects" effects=${inFlight} failed=${false} />`
    }
    ${
      attempts.length > 0 &&
      html`<details><summary>All attempts (${attempts.length})</summary>
        <table><thead><tr><th scope="col">Effect</th><th scope="col">Type</th><th scope="col">Attempt</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Error</th></tr></thead>
        <tbody>${attempts.map(
          (a) => html`<tr key=${`${a.effectId}:${a.attempt}`}>
            <td>${a.effectId}</td><td>${a.type}</td><td>${a.attempt}</td><td>${a.status}</td>
            <td>${time(a.startedAt)}</td><td>${time(a.finishedAt)}</td>
            <td>${a.error ? `${a.error.code}: ${a.error.message}` : ''}</td>
          </tr>`,
        )}</tbody></table>
      </details>`
    }
  </section>`
}

/** The thread tree: children under their parent, each with kind, definition and status. */
export function Threads({ threads }) {
  const list = Object.values(threads ?? {})
  const children = (parent) => list.filter((t) => (t.parentThreadId ?? null) === parent)
  const branch = (parent) => {
    const kids = children(parent)
    if (kids.length === 0) return null
    return html`<ul>${kids.map(
      (t) => html`<li key=${t.threadId}>
        <span class="thread-id">${t.threadId}</span> ${t.kind}:${t.definitionName}
        <span class=${`badge status-${t.status}`}>${t.status}</span>
        ${t.error && html`<span class="error"> ${t.error.code}: ${t.error.message}</span>`}
        ${branch(t.threadId)}
      </li>`,
    )}</ul>`
  }
  return html`<section class="threads" aria-labelledby="threads-title">
    <h2 id="threads-title">Threads</h2>${branch(null)}
  </section>`
}

/** Agent transcripts as chat: user, assistant (with tool calls) and tool lines, plus tokens. */
export function Conversation({ messages, usage }) {
  if (!messages || messages.length === 0) return null
  return html`<section class="conversation" aria-labelledby="conversation-title">
    <h2 id="conversation-title">Conversation</h2>
    ${usage && html`<p class="usage">Tokens: ${usage.inputTokens} in, ${usage.outputTokens} out, ${usage.calls} model call(s)</p>`}
    <ol class="chat">${messages.map(
      (m) => html`<li key=${m.seq} class=${`bubble role-${m.role}${m.isError ? ' is-error' : ''}`}>
        <span class="role">${m.role}${m.name ? ` · ${m.name}` : ''}</span>
        <p>${m.content.length > 4000 ? `${m.content.slice(0, 4000)}…` : m.content}</p>
        ${(m.toolCalls ?? []).map(
          (call) =>
            html`<p class="tool-call">calls <strong>${call.name}</strong> ${brief(call.arguments)}</p>`,
        )}
      </li>`,
    )}</ol>
  </section>`
}

export function Evaluations({ items }) {
  if (!items || items.length === 0) return null
  return html`<section class="evaluations" aria-labelledby="evaluations-title">
    <h2 id="evaluations-title">Evaluations</h2>
    <table><thead><tr><th scope="col">Evaluator</th><th scope="col">Route</th><th scope="col">Score</th><th scope="col">Reason</th></tr></thead>
    <tbody>${items.map(
      (e, i) =>
        html`<tr key=${i}><td>${e.evaluator}</td><td>${e.route}</td><td>${e.score ?? ''}</td><td>${e.reason ?? ''}</td></tr>`,
    )}</tbody></table>
  </section>`
}
