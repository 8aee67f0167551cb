// What an operator reads first on a run page, without a click per event: the run's input and
// attributes, what it is waiting on, and every workflow node's result or error. All of it comes
// from views the page already has (the status, pending approvals, the timeline's events).
import { brief, pretty, time } from './format.js'
import { html } from './html.js'
import { describeWait } from './timeline-spans.js'

/** The input the run started with (an admitted run's, when its queue replaced it). */
export function runInput(events) {
  let input
  for (const event of events) {
    if (event.type === 'runtime.run.started') input = { value: event.payload?.input }
    if (event.type === 'runtime.run.admitted' && event.payload?.input !== undefined) {
      input = { value: event.payload.input }
    }
  }
  return input
}

/**
 * What a running run waits on, one line each: "waiting for approval: …", "sleeping until …",
 * "waiting for <event type>", "child <definition> (<thread>) running". `status` is
 * `GET /runs/:id/status`; `approvals` the pending approvals.
 */
export function waitingOn(status, approvals = []) {
  const lines = approvals
    .filter((item) => item.status === 'pending')
    .map((item) => ({
      key: `approval:${item.approvalId}`,
      text: `waiting for approval: ${item.title}`,
    }))
  for (const wait of status?.waits ?? []) {
    // An approval's gate waits for its decision: the line above says it better.
    if (lines.length > 0 && wait.on?.event?.type === 'approval.decided') continue
    lines.push({ key: `wait:${wait.waitId}`, text: describeWait(wait.on, time) })
  }
  for (const thread of status?.threads ?? []) {
    if (thread.parentThreadId === null || !['running', 'waiting'].includes(thread.status)) continue
    lines.push({
      key: `child:${thread.threadId}`,
      text: `child ${thread.kind}:${thread.definitionName} (${thread.threadId}) ${thread.status}`,
    })
  }
  return lines
}

/** `loaded`: the events were read (so a missing start event is missing, not on its way). */
export function InputAndAttributes({ input, loaded, attributes, head }) {
  const names = Object.keys(attributes ?? {})
  return html`<div class="run-facts">
    <h2 class="facts-title">Input</h2>
    ${
      input
        ? html`<pre class="run-input" data-testid="run-input">${pretty(input.value, 4000)}</pre>`
        : html`<p class="note">${
            !loaded
              ? 'Reading…'
              : head > 1
                ? 'The start event was trimmed from the log (after a snapshot): the input is no longer kept.'
                : 'No start event could be read.'
          }</p>`
    }
    ${
      names.length > 0 &&
      html`<h2 class="facts-title">Attributes</h2>
      <dl class="attributes" data-testid="run-attributes">${names.map(
        (name) => html`<dt>${name}</dt><dd><code>${JSON.stringify(attributes[name])}</code></dd>`,
      )}</dl>`
    }
  </div>`
}

/** Every workflow node that started: status, when it ended, and its result or error inline. */
export function NodeResults({ events }) {
  const nodes = new Map()
  for (const event of events) {
    if (!event.type.startsWith('workflow.node.')) continue
    const p = event.payload ?? {}
    if (typeof p.nodeId !== 'string') continue
    const key = `${event.threadId}:${p.nodeId}`
    const node = nodes.get(key) ?? { threadId: event.threadId, nodeId: p.nodeId }
    node.status = event.type.slice('workflow.node.'.length)
    node.at = event.ts
    if ('result' in p) node.result = p.result
    if (p.error) node.error = p.error
    nodes.set(key, node)
  }
  if (nodes.size === 0) return null
  return html`<section class="node-results" aria-labelledby="node-results-title">
    <h2 id="node-results-title">Node results</h2>
    <table><thead><tr><th scope="col">Node</th><th scope="col">Thread</th><th scope="col">Status</th><th scope="col">At</th><th scope="col">Result or error</th></tr></thead>
    <tbody>${[...nodes.values()].map(
      (n) => html`<tr key=${`${n.threadId}:${n.nodeId}`} data-node-result=${n.nodeId}>
        <td>${n.nodeId}</td><td class="thread-id">${n.threadId}</td><td>${n.status}</td><td>${time(n.at)}</td>
        <td>${
          n.error
            ? html`<span class="error">${n.error.code}: ${n.error.message}</span>`
            : 'result' in n
              ? html`<code class="node-result">${brief(n.result, 300)}</code>`
              : ''
        }</td>
      </tr>`,
    )}</tbody></table>
  </section>`
}
