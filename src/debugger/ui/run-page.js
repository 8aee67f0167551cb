// One run: header (input, attributes, what it waits on) and actions, the timeline of where its
// time went, the DAG of its workflow threads, node results, approvals, effects, threads,
// conversation, evaluations, the live event list and time travel. Everything is read from
// the HTTP API; the stream of events triggers a re-read of the (small) views.
import { useEffect, useRef, useState } from 'preact/hooks'
import { api, config, describe, enc } from './api.js'
import { Dag } from './dag.js'
import { time } from './format.js'
import { html } from './html.js'
import { Inspector } from './inspector.js'
import { followEvents } from './live.js'
import { Migrate } from './migrate.js'
import { ActionButton, Approvals, Conversation, Effects, Evaluations, Threads } from './panels.js'
import { InputAndAttributes, NodeResults, runInput, waitingOn } from './run-facts.js'
import { CancelRun, ForkedFrom, ForkFromNode } from './run-operations.js'
import { RunTimeline } from './run-timeline.js'
import { Timeline } from './timeline.js'
import { useTimelineEvents } from './timeline-events.js'

const FINISHED = new Set(['completed', 'failed', 'cancelled'])

/** Live events handed to the timeline at once (older ones it already has, or reads again). */
const LIVE_KEPT = 1000

let definitionsOnce
const definitions = () =>
  (definitionsOnce ??= fetch(`${config.basePath}/definitions.json`, { credentials: 'same-origin' })
    .then((r) => (r.ok ? r.json() : { definitions: [] }))
    .then((d) => d.definitions ?? [])
    .catch(() => []))

/** A projection's value, or `fallback` when the module is not there (404) or it fails. */
const projection = (runId, name, fallback) =>
  api(`/runs/${enc(runId)}/projections/${name}`)
    .then((a) => a.value)
    .catch(() => fallback)

async function loadRun(runId) {
  const [run, status] = await Promise.all([
    api(`/runs/${enc(runId)}`),
    api(`/runs/${enc(runId)}/status`),
  ])
  const [effects, approvals, nodes, conversation, usage, evaluations, defs] = await Promise.all([
    api(`/runs/${enc(runId)}/effects`)
      .then((a) => a.effects)
      .catch(() => []),
    projection(runId, 'pendingApprovals', { items: [] }),
    projection(runId, 'workflowNodes', { threads: {} }),
    projection(runId, 'conversation', { messages: [] }),
    projection(runId, 'tokenUsage', null),
    projection(runId, 'evaluations', { items: [] }),
    definitions(),
  ])
  return {
    state: run.state,
    status,
    effects,
    approvals,
    nodes,
    conversation,
    usage,
    evaluations,
    defs,
  }
}

function Graphs({ state, nodes, defs }) {
  const workflows = Object.values(state.threads ?? {}).filter((t) => t.kind === 'workflow')
  return workflows.map((thread) => {
    const def = defs.find(
      (d) =>
        d.kind === 'workflow' &&
        d.name === thread.definitionName &&
        d.version === thread.definitionVersion,
    )
    const states = nodes.threads?.[thread.threadId] ?? {}
    // Without the definition (another version, or not registered here) only started nodes are known.
    const graph =
      def?.nodes ?? Object.keys(states).map((id) => ({ id, after: [], conditional: false }))
    if (graph.length === 0) return null
    return html`<section class="graph" key=${thread.threadId} aria-label=${`Workflow ${thread.definitionName}`}>
      <h2>Workflow ${thread.definitionName}</h2>
      <${Dag} nodes=${graph} states=${states}
        label=${`${thread.definitionName}@${thread.definitionVersion} on ${thread.threadId}${def ? '' : ' (definition not registered here: only started nodes shown)'}`} />
    </section>`
  })
}

export function RunPage({ runId }) {
  const [data, setData] = useState(null)
  const [error, setError] = useState(null)
  const [stream, setStream] = useState({ live: false })
  const [tail, setTail] = useState(0)
  const [live, setLive] = useState([])
  const [selected, setSelected] = useState(null)
  const reload = useRef(() => {})
  const read = useTimelineEvents(runId, data?.status.tail ?? 0)

  useEffect(() => {
    let active = true
    let timer
    let stop = () => {}
    const refresh = async () => {
      try {
        const next = await loadRun(runId)
        if (!active) return
        setData(next)
        setTail((t) => Math.max(t, next.status.tail))
        setError(null)
        return next
      } catch (e) {
        if (active) setError(e)
      }
    }
    // Many events in a burst cause one re-read, not one per event.
    reload.current = () => {
      clearTimeout(timer)
      timer = setTimeout(refresh, 150)
    }
    refresh().then((first) => {
      if (!active || !first) return
      stop = followEvents(
        runId,
        first.status.tail,
        (events) => {
          setTail((t) => Math.max(t, events[events.length - 1].seq))
          // Batches that arrive before a render must all reach the timeline: keep the latest.
          setLive((queued) => queued.concat(events).slice(-LIVE_KEPT))
          reload.current()
        },
        setStream,
      )
    })
    return () => {
      active = false
      clearTimeout(timer)
      stop()
    }
  }, [runId])

  if (error && !data) {
    return html`<div class="error-state" role="alert">
      <h1>Run ${runId}</h1>
      <p>Could not load this run: ${describe(error)}</p>
      <p><a href="#/">Back to runs</a></p>
    </div>`
  }
  if (!data) return html`<p aria-busy="true">Loading run ${runId}…</p>`
  const { state, status } = data
  const finished = FINISHED.has(state.status)
  const waits = finished ? [] : waitingOn(status, data.approvals.items ?? [])
  return html`<article class="run" aria-labelledby="run-title">
    <header class="run-header">
      <h1 id="run-title">Run <code>${runId}</code></h1>
      <dl>
        <dt>Status</dt><dd><span class=${`badge status-${state.status}`} data-testid="run-status">${state.status}</span></dd>
        <dt>Definition</dt><dd>${state.kind}:${state.definitionName}@${state.definitionVersion}</dd>
        <dt>Created</dt><dd>${time(state.createdAt)}</dd>
        <dt>Updated</dt><dd>${time(state.updatedAt)}</dd>
        <dt>Events</dt><dd>${status.head}–${Math.max(tail, status.tail)}</dd>
        <dt>Live</dt><dd>${stream.live ? 'connected' : stream.error ? `disconnected (${describe(stream.error)})` : 'connecting…'}</dd>
      </dl>
      <${ForkedFrom} runId=${runId} />
      ${state.stranded && html`<p class="error" data-testid="run-stranded">Stranded: ${state.reason}</p>`}
      ${!state.stranded && state.executing === false && html`<p data-testid="run-elsewhere">${state.reason}</p>`}
      ${
        waits.length > 0 &&
        html`<p class="facts-title">Waiting on</p><ul class="waiting-list" data-testid="waiting-on">${waits.map(
          (w) => html`<li key=${w.key}>${w.text}</li>`,
        )}</ul>`
      }
      ${state.error && html`<p class="error">Failed: ${state.error.code}: ${state.error.message}</p>`}
      ${state.output !== undefined && html`<p class="output">Output: <code>${JSON.stringify(state.output).slice(0, 300)}</code></p>`}
      <${InputAndAttributes} input=${runInput(read.events)} loaded=${read.loaded}
        attributes=${state.attributes} head=${status.head} />
      <div class="actions">
        ${
          // A finished run has nothing to wake.
          !finished &&
          html`<${ActionButton} label="Wake" run=${() => api(`/runs/${enc(runId)}/wake`, { method: 'POST' })}
            onDone=${() => reload.current()} />`
        }
        <${CancelRun} runId=${runId} status=${state.status} onDone=${() => reload.current()} />
        <${ForkFromNode} runId=${runId}
          nodes=${Object.keys(data.nodes.threads?.[state.rootThreadId] ?? {})} />
        <${Migrate} runId=${runId} state=${state} defs=${data.defs} onDone=${() => reload.current()} />
      </div>
      ${error && html`<p class="error" role="alert">Refresh failed: ${describe(error)}</p>`}
    </header>
    <${RunTimeline} read=${read} state=${state} />
    <div class="panels">
      <${Graphs} state=${state} nodes=${data.nodes} defs=${data.defs} />
      <${NodeResults} events=${read.events} />
      <${Approvals} runId=${runId} items=${data.approvals.items ?? []} onChange=${() => reload.current()} />
      <${Effects} runId=${runId} open=${status.effects ?? []} attempts=${data.effects}
        onChange=${() => reload.current()} />
      <${Threads} threads=${state.threads} />
      <${Conversation} messages=${data.conversation.messages} usage=${data.usage} />
      <${Evaluations} items=${data.evaluations.items} />
    </div>
    <div class="history">
      <${Timeline} runId=${runId} head=${Math.max(1, status.head)} tail=${Math.max(tail, status.tail)}
        live=${live} selected=${selected} onSelect=${setSelected} />
      ${selected !== null && html`<${Inspector} runId=${runId} seq=${selected} onClose=${() => setSelected(null)} />`}
    </div>
  </article>`
}
