// The runs page: one page of summaries at a time (newest first), a status filter, a search by
// run id prefix, and a refresh every few seconds. Running runs show what they wait on.
import { useEffect, useRef, useState } from 'preact/hooks'
import { api, describe, enc } from './api.js'
import { time } from './format.js'
import { html } from './html.js'

const PAGE = 25
const REFRESH_MS = 2000
const STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled']

/** Pending approvals of running runs, fetched again only when the run changed. */
function useWaitingOn(runs) {
  const cache = useRef(new Map())
  const [, setTick] = useState(0)
  useEffect(() => {
    let live = true
    for (const run of runs) {
      if (run.status !== 'running') continue
      const key = `${run.runId}@${run.updatedAt}`
      if (cache.current.get(run.runId)?.key === key) continue
      cache.current.set(run.runId, { key, items: cache.current.get(run.runId)?.items ?? [] })
      api(`/runs/${enc(run.runId)}/projections/pendingApprovals`)
        .then((answer) => answer.value?.items ?? [])
        // No approval module (404) or no permission: nothing to show.
        .catch(() => [])
        .then((items) => {
          cache.current.set(run.runId, { key, items })
          if (live) setTick((t) => t + 1)
        })
    }
    return () => {
      live = false
    }
  }, [runs])
  return (run) =>
    run.status === 'running'
      ? (cache.current.get(run.runId)?.items ?? []).filter((i) => i.status === 'pending')
      : []
}

export function RunsPage() {
  const [status, setStatus] = useState('')
  const [prefix, setPrefix] = useState('')
  const [cursors, setCursors] = useState([undefined])
  const [page, setPage] = useState(null)
  const [error, setError] = useState(null)
  const cursor = cursors[cursors.length - 1]

  useEffect(() => {
    let live = true
    const load = async () => {
      const query = new URLSearchParams({ limit: String(PAGE) })
      if (status) query.set('status', status)
      if (prefix.trim()) query.set('runIdPrefix', prefix.trim())
      if (cursor) query.set('cursor', cursor)
      try {
        const answer = await api(`/runs/summaries?${query}`)
        if (!live) return
        setPage(answer)
        setError(null)
      } catch (e) {
        if (live) setError(e)
      }
    }
    load()
    const timer = setInterval(load, REFRESH_MS)
    return () => {
      live = false
      clearInterval(timer)
    }
  }, [status, prefix, cursor])

  const waitingOn = useWaitingOn(page?.runs ?? [])
  const restart = (apply) => (event) => {
    apply(event.currentTarget.value)
    setCursors([undefined])
  }

  return html`<section class="runs" aria-labelledby="runs-title">
    <h1 id="runs-title">Runs</h1>
    <form class="filters" role="search" onSubmit=${(e) => e.preventDefault()}>
      <label for="status-filter">Status</label>
      <select id="status-filter" value=${status} onChange=${restart(setStatus)}>
        <option value="">any</option>
        ${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
      </select>
      <label for="run-search">Run id starts with</label>
      <input id="run-search" type="search" value=${prefix} onInput=${restart(setPrefix)} />
    </form>
    ${error && html`<p class="error" role="alert">Could not list runs: ${describe(error)}</p>`}
    ${
      page === null && !error
        ? html`<p aria-busy="true">Loading…</p>`
        : page &&
          html`<table class="run-table">
            <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Definition</th><th scope="col">Waiting on</th><th scope="col">Created</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              ${page.runs.length === 0 && html`<tr><td colspan="6">No runs match.</td></tr>`}
              ${page.runs.map((run) => {
                const waits = waitingOn(run)
                return html`<tr key=${run.runId} data-run-id=${run.runId}>
                  <td><a href=${`#/runs/${enc(run.runId)}`}>${run.runId}</a></td>
                  <td><span class=${`badge status-${run.status}`}>${run.status}</span>${run.stranded && html` <span class="badge fleet-stranded" title="no live host registers this version">stranded</span>`}</td>
                  <td>${run.kind}:${run.definitionName}@${run.definitionVersion}</td>
                  <td class="waiting-on">${waits.map(
                    (item) =>
                      html`<span class="waiting">waiting for approval: <strong>${item.title}</strong></span>`,
                  )}</td>
                  <td>${time(run.createdAt)}</td>
                  <td>${time(run.updatedAt)}</td>
                </tr>`
              })}
            </tbody>
          </table>`
    }
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled=${cursors.length === 1}
        onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>
      <button type="button" disabled=${!page?.nextCursor}
        onClick=${() => setCursors([...cursors, page.nextCursor])}>Older</button>
    </nav>
  </section>`
}
