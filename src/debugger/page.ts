import { createHash } from 'node:crypto'

export interface PageParts {
  title: string
  /** `${basePath}/assets/${hash}`. */
  assetBase: string
  basePath: string
  apiBase: string
  imports: Readonly<Record<string, string>>
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  )

/**
 * The one HTML page and its Content-Security-Policy. The import map is the only inline script;
 * the policy allows it by its hash, so nothing else inline (and nothing from another origin)
 * can run. Settings reach the scripts through `data-` attributes, not inline code.
 */
export function renderPage(parts: PageParts): { html: string; csp: string } {
  const importMap = JSON.stringify({
    imports: Object.fromEntries(
      Object.entries(parts.imports).map(([specifier, file]) => [
        specifier,
        `${parts.assetBase}/${file}`,
      ]),
    ),
  })
  const mapHash = createHash('sha256').update(importMap).digest('base64')
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${escapeHtml(parts.title)}</title>
<link rel="stylesheet" href="${escapeHtml(parts.assetBase)}/app.css">
<script type="importmap">${importMap}</script>
<script type="module" src="${escapeHtml(parts.assetBase)}/app.js"></script>
</head>
<body data-api-base="${escapeHtml(parts.apiBase)}" data-base-path="${escapeHtml(parts.basePath)}" data-title="${escapeHtml(parts.title)}">
<noscript>The Skein debugger needs JavaScript.</noscript>
<div id="app"></div>
</body>
</html>
`
  const connect = ["'self'"]
  if (/^https?:\/\//.test(parts.apiBase)) connect.push(new URL(parts.apiBase).origin)
  const csp = [
    "default-src 'none'",
    `script-src 'self' 'sha256-${mapHash}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connect.join(' ')}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
  return { html, csp }
}
