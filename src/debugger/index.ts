export type { DebuggerUi, DebuggerUiOptions } from './debugger-ui.js'
export { debuggerUi } from './debugger-ui.js'
export type { DefinitionView, GraphNode } from './definitions.js'
