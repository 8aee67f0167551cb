// The runs page: one page of summaries at a time, searched by every filter of
// `GET /runs/summaries` (run-filters.js), refreshed every few seconds. Each run shows its
// attributes, and a running run what it waits on (approvals, timers, signals, children).
import { useEffect, useRef, useState } from 'preact/hooks'
import { api, config, describe, enc } from './api.js'
import { time } from './format.js'
import { html } from './html.js'
import { waitingOn } from './run-facts.js'
import { filtersFromHash, filtersToHash, RunFilters, summaryQuery } from './run-filters.js'

const PAGE = 25
const REFRESH_MS = 2000

/** What running runs wait on (status and pending approvals), read again only when a run changed. */
function useWaitingOn(runs) {
  const cache = useRef(new Map())
  const [, setTick] = useState(0)
  useEffect(() => {
    let live = true
    for (const run of runs) {
      if (run.status !== 'running') continue
      const key = `${run.runId}@${run.updatedAt}`
      if (cache.current.get(run.runId)?.key === key) continue
      cache.current.set(run.runId, { key, lines: cache.current.get(run.runId)?.lines ?? [] })
      const id = enc(run.runId)
      Promise.all([
        api(`/runs/${id}/status`).catch(() => null),
        api(`/runs/${id}/projections/pendingApprovals`)
          .then((answer) => answer.value?.items ?? [])
          // No approval module (404) or no permission: nothing to show.
          .catch(() => []),
      ]).then(([status, approvals]) => {
        cache.current.set(run.runId, { key, lines: waitingOn(status, approvals) })
        if (live) setTick((t) => t + 1)
      })
    }
    return () => {
      live = false
    }
  }, [runs])
  return (run) => (run.status === 'running' ? (cache.current.get(run.runId)?.lines ?? []) : [])
}

let namesOnce
/** Definition names for the picker, from the registered definitions. */
const definitionNames = () =>
  (namesOnce ??= fetch(`${config.basePath}/definitions.json`, { credentials: 'same-origin' })
    .then((r) => (r.ok ? r.json() : { definitions: [] }))
    .then((d) => [...new Set((d.definitions ?? []).map((def) => def.name))].sort())
    .catch(() => []))

const Attributes = ({ attributes }) =>
  Object.entries(attributes ?? {}).map(
    ([name, value]) => html`<span class="attr-chip" key=${name}>${name}=${String(value)}</span>`,
  )

export function RunsPage() {
  const [filters, setFilters] = useState(() => filtersFromHash(location.hash))
  const [names, setNames] = useState([])
  const [cursors, setCursors] = useState([undefined])
  const [page, setPage] = useState(null)
  const [error, setError] = useState(null)
  const cursor = cursors[cursors.length - 1]

  useEffect(() => {
    definitionNames().then(setNames)
  }, [])

  useEffect(() => {
    let live = true
    const load = async () => {
      const query = summaryQuery(filters)
      query.set('limit', String(PAGE))
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
  }, [filters, cursor])

  const waitingOn = useWaitingOn(page?.runs ?? [])
  const search = (next) => {
    setFilters(next)
    setCursors([undefined])
    // The address says what is searched, so it can be shared (no navigation, no history entry).
    history.replaceState(null, '', filtersToHash(next))
  }

  return html`<section class="runs" aria-labelledby="runs-title">
    <h1 id="runs-title">Runs</h1>
    <${RunFilters} filters=${filters} names=${names} onChange=${search} />
    ${error && html`<p class="error" role="alert">Could not list runs: ${describe(error)}</p>`}
    ${
      page === null && !error
        ? html`<p aria-busy="true">Loading…</p>`
        : page &&
          html`<table class="run-table">
            <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Definition</th><th scope="col">Attributes</th><th scope="col">Waiting on</th><th scope="col">Created</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              ${page.runs.length === 0 && html`<tr><td colspan="7">No runs match.</td></tr>`}
              ${page.runs.map(
                (run) => html`<tr key=${run.runId} data-run-id=${run.runId}>
                  <td><a href=${`#/runs/${enc(run.runId)}`}>${run.runId}</a></td>
                  <td><span class=${`badge status-${run.status}`}>${run.status}</span>${run.stranded && html` <span class="badge fleet-stranded" title="no live host registers this version">stranded</span>`}</td>
                  <td>${run.kind}:${run.definitionName}@${run.definitionVersion}</td>
                  <td class="attributes-cell"><${Attributes} attributes=${run.attributes} /></td>
                  <td class="waiting-on">${waitingOn(run).map(
                    (line) => html`<span class="waiting" key=${line.key}>${line.text}</span> `,
                  )}</td>
                  <td>${time(run.createdAt)}</td>
                  <td>${time(run.updatedAt)}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
    }
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled=${cursors.length === 1}
        onClick=${() => setCursors(cursors.slice(0, -1))}>${filters.order === 'oldest' ? 'Earlier' : 'Newer'}</button>
      <button type="button" disabled=${!page?.nextCursor}
        onClick=${() => setCursors([...cursors, page.nextCursor])}>${filters.order === 'oldest' ? 'Later' : 'Older'}</button>
    </nav>
  </section>`
}
