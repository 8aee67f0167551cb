// The debugger's entry: a hash router over two pages, the token field, and an error boundary
// so a bug or bad data shows an error state instead of a blank page.
import { render } from 'preact'
import { useEffect, useErrorBoundary, useState } from 'preact/hooks'
import { config, token } from './api.js'
import { html } from './html.js'
import { QueuesPage } from './queues-page.js'
import { RunPage } from './run-page.js'
import { RunsPage } from './runs-page.js'
import { SchedulesPage } from './schedules-page.js'
import { VersionsPage } from './versions-page.js'

const parseRoute = () => {
  const hash = location.hash.replace(/^#/, '')
  if (hash.startsWith('/schedules')) return { page: 'schedules' }
  if (hash.startsWith('/queues')) return { page: 'queues' }
  if (hash.startsWith('/versions')) return { page: 'versions' }
  const match = /^\/runs\/([^?]+)/.exec(hash)
  return match ? { page: 'run', runId: decodeURIComponent(match[1]) } : { page: 'runs' }
}

function TokenForm({ onChange }) {
  const [value, setValue] = useState(token.get())
  const [saved, setSaved] = useState(token.get() !== '')
  const submit = (event) => {
    event.preventDefault()
    token.set(value.trim())
    setSaved(value.trim() !== '')
    onChange()
  }
  return html`<form class="token" onSubmit=${submit}>
    <label for="api-token">API token</label>
    <input id="api-token" type="password" autocomplete="off" placeholder="none (cookies only)"
      value=${value} onInput=${(e) => setValue(e.currentTarget.value)} />
    <button type="submit">${saved ? 'Update token' : 'Use token'}</button>
    ${
      saved &&
      html`<button type="button" onClick=${() => {
        setValue('')
        token.set('')
        setSaved(false)
        onChange()
      }}>Forget token</button>`
    }
  </form>`
}

function Boundary({ children }) {
  const [error, reset] = useErrorBoundary()
  if (error) {
    return html`<div class="error-state" role="alert">
      <h2>The debugger hit an error</h2>
      <p>${String(error?.message ?? error)}</p>
      <button type="button" onClick=${reset}>Try again</button>
    </div>`
  }
  return children
}

function App() {
  const [route, setRoute] = useState(parseRoute())
  const [generation, setGeneration] = useState(0)
  useEffect(() => {
    const onHash = () => setRoute(parseRoute())
    addEventListener('hashchange', onHash)
    return () => removeEventListener('hashchange', onHash)
  }, [])
  useEffect(() => {
    document.title = route.page === 'run' ? `${route.runId} · ${config.title}` : config.title
  }, [route])
  return html`<header class="top">
      <a class="brand" href="#/">${config.title}</a>
      <nav aria-label="Main"><a href="#/">Runs</a> <a href="#/schedules">Schedules</a>
        <a href="#/queues">Queues</a> <a href="#/versions">Versions</a></nav>
      <${TokenForm} onChange=${() => setGeneration((g) => g + 1)} />
    </header>
    <main id="main">
      <${Boundary} key=${`${route.page}:${route.runId ?? ''}:${generation}`}>
        ${
          route.page === 'run'
            ? html`<${RunPage} runId=${route.runId} />`
            : route.page === 'schedules'
              ? html`<${SchedulesPage} />`
              : route.page === 'queues'
                ? html`<${QueuesPage} />`
                : route.page === 'versions'
                  ? html`<${VersionsPage} />`
                  : html`<${RunsPage} />`
        }
      <//>
    </main>`
}

render(html`<${App} />`, document.getElementById('app'))
