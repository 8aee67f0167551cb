// The run list's search form: the filters of `GET /runs/summaries` (statuses, definition and
// version, attributes, created time range, run id prefix, order), and an "open run by id" box.
import { useState } from 'preact/hooks'
import { enc } from './api.js'
import { html } from './html.js'

export const STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled']

const TIME_FILTERS = ['createdFrom', 'createdBefore', 'updatedFrom', 'updatedBefore']

export const EMPTY_FILTERS = {
  statuses: [],
  definitionName: '',
  definitionVersion: '',
  attributes: '',
  createdFrom: '',
  createdBefore: '',
  updatedFrom: '',
  updatedBefore: '',
  runIdPrefix: '',
  order: 'newest',
}

/**
 * `customer=c1 amount>=100 note=two words` → `['customer=c1', 'amount>=100', 'note=two words']`:
 * a new filter starts only where a name and an operator follow a space, so values keep theirs.
 */
export function attributeFilters(text) {
  return text
    .trim()
    .split(/\s+(?=[A-Za-z_][A-Za-z0-9_]*(?:>=|<=|=))/)
    .filter((part) => part !== '')
}

/** The filters in the page's address (`#/?statuses=failed&attributes=customer%3Dc42`), to share. */
export function filtersToHash(filters) {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(filters)) {
    const text = Array.isArray(value) ? value.join(',') : value
    if (text !== EMPTY_FILTERS[name] && text !== '') query.set(name, text)
  }
  const text = query.toString()
  return text ? `#/?${text}` : '#/'
}

/** The filters an address carries (unknown names and statuses are left out). */
export function filtersFromHash(hash) {
  const query = new URLSearchParams(hash.replace(/^#\/?\??/, ''))
  const filters = { ...EMPTY_FILTERS }
  for (const name of Object.keys(EMPTY_FILTERS)) {
    const value = query.get(name)
    if (value === null) continue
    filters[name] =
      name === 'statuses' ? value.split(',').filter((s) => STATUSES.includes(s)) : value
  }
  return filters
}

/** The filters as the query of `GET /runs/summaries` (without limit and cursor). */
export function summaryQuery(filters) {
  const query = new URLSearchParams()
  if (filters.statuses.length > 0) query.set('status', filters.statuses.join(','))
  for (const name of ['definitionName', 'definitionVersion', 'runIdPrefix']) {
    if (filters[name].trim()) query.set(name, filters[name].trim())
  }
  // datetime-local inputs are local times: sent as epoch ms.
  for (const name of TIME_FILTERS) {
    const at = filters[name] ? new Date(filters[name]).getTime() : Number.NaN
    if (Number.isFinite(at)) query.set(name, String(at))
  }
  if (filters.order === 'oldest') query.set('order', 'oldest')
  for (const attr of attributeFilters(filters.attributes)) query.append('attr', attr)
  return query
}

function OpenRun() {
  const [runId, setRunId] = useState('')
  const open = (event) => {
    event.preventDefault()
    if (runId.trim()) location.hash = `#/runs/${enc(runId.trim())}`
  }
  return html`<form class="open-run" onSubmit=${open}>
    <label for="open-run-id">Open run by id</label>
    <input id="open-run-id" type="text" autocomplete="off" value=${runId}
      onInput=${(e) => setRunId(e.currentTarget.value)} />
    <button type="submit">Open</button>
  </form>`
}

/**
 * Attribute filters apply when committed (Enter, or leaving the field): a half-typed one would
 * be refused by the server at every keystroke. The draft is the field's own state meanwhile.
 */
function AttributeInput({ value, onCommit }) {
  const [draft, setDraft] = useState(value)
  const commit = () => {
    if (draft !== value) onCommit(draft)
  }
  return html`<input id="attribute-filter" type="search" placeholder="customer=c42 amount>=100"
    value=${draft} onInput=${(e) => setDraft(e.currentTarget.value)} onChange=${commit}
    onKeyDown=${(e) => e.key === 'Enter' && commit()} />`
}

/** A time range filter: two local times, `from` (inclusive) and `before`. */
function TimeRange({ label, from, before, filters, set }) {
  return html`<span class="time-range">
    <label for=${from}>${label} from</label>
    <input id=${from} type="datetime-local" value=${filters[from]} onInput=${set(from)} />
    <label for=${before}>before</label>
    <input id=${before} type="datetime-local" value=${filters[before]} onInput=${set(before)} />
  </span>`
}

/** `names`: definition names for the picker; `onChange(filters)` on every edit. */
export function RunFilters({ filters, names, onChange }) {
  const set = (name) => (event) => onChange({ ...filters, [name]: event.currentTarget.value })
  const toggle = (status) => (event) =>
    onChange({
      ...filters,
      statuses: event.currentTarget.checked
        ? [...filters.statuses, status]
        : filters.statuses.filter((s) => s !== status),
    })
  return html`<div class="search">
    <${OpenRun} />
    <form class="filters" role="search" aria-label="Find runs" onSubmit=${(e) => e.preventDefault()}>
      <fieldset class="statuses"><legend>Status</legend>
        ${STATUSES.map(
          (s) => html`<label key=${s}><input type="checkbox" name="status" value=${s}
            checked=${filters.statuses.includes(s)} onChange=${toggle(s)} /> ${s}</label>`,
        )}
      </fieldset>
      <label for="definition-filter">Definition</label>
      <select id="definition-filter" value=${filters.definitionName} onChange=${set('definitionName')}>
        <option value="">any</option>
        ${names.map((name) => html`<option key=${name} value=${name}>${name}</option>`)}
      </select>
      <label for="version-filter">Version</label>
      <input id="version-filter" type="text" size="6" value=${filters.definitionVersion}
        onInput=${set('definitionVersion')} />
      <label for="attribute-filter">Attributes</label>
      <${AttributeInput} value=${filters.attributes}
        onCommit=${(attributes) => onChange({ ...filters, attributes })} />
      <${TimeRange} label="Created" from="createdFrom" before="createdBefore" filters=${filters} set=${set} />
      <${TimeRange} label="Updated" from="updatedFrom" before="updatedBefore" filters=${filters} set=${set} />
      <label for="run-search">Run id starts with</label>
      <input id="run-search" type="search" value=${filters.runIdPrefix} onInput=${set('runIdPrefix')} />
      <label for="order">Order</label>
      <select id="order" value=${filters.order} onChange=${set('order')}>
        <option value="newest">newest first</option>
        <option value="oldest">oldest first</option>
      </select>
    </form>
  </div>`
}
