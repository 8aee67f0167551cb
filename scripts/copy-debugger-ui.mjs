#!/usr/bin/env node
// Part of `npm run build`: tsc emits only compiled TypeScript, so the debugger's browser files
// (plain ES modules and CSS, served as they are) are copied next to the compiled server code.
import { cpSync } from 'node:fs'

cpSync('src/debugger/ui', 'dist/debugger/ui', { recursive: true })
