// The Versions page: the drift report (engine.versions(), GET /definitions/versions), runs not
// yet finished per definition version, which versions no live host registers (stranded runs)
// and which are safe to remove (docs/deploys.md). Read again every few seconds while open.
import { html } from './html.js'
import { usePolled } from './polled.js'

const REFRESH_MS = 3000

const fleet = (v) => (v.live ? 'live' : v.activeRuns > 0 ? 'stranded' : 'none')

export function VersionsPage() {
  const { body: report, error } = usePolled('/definitions/versions', REFRESH_MS)
  if (error && report === null) return html`<div class="error-state" role="alert">${error}</div>`
  if (report === null) return html`<p>Loading versions…</p>`
  return html`<h2>Versions</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      report.strandedRuns > 0 &&
      html`<p class="error" data-testid="stranded-total">${report.strandedRuns} run(s) stranded:
        no live host registers their version; they resume when one starts.</p>`
    }
    ${
      report.unexecutableRuns > 0 &&
      html`<p>${report.unexecutableRuns} run(s) wait for a host that registers their version.</p>`
    }
    <table aria-label="versions"><thead><tr><th>Definition</th><th>Version</th>
      <th>Active runs</th><th>Here</th><th>Fleet</th><th>Shape</th><th>Safe to remove</th>
      </tr></thead><tbody>
      ${report.versions.map(
        (v) => html`<tr key=${`${v.kind}:${v.name}@${v.version}`}>
          <td>${v.kind}:${v.name}</td><td>${v.version}${v.isDefault ? ' (default)' : ''}</td>
          <td>${v.activeRuns}</td><td>${v.registered ? 'registered' : 'missing'}</td>
          <td><span class=${`badge fleet-${fleet(v)}`}>${fleet(v)}</span></td>
          <td>${v.fingerprint ?? '—'}</td><td>${v.safeToDelete ? 'yes' : 'no'}</td></tr>`,
      )}
    </tbody></table>`
}
