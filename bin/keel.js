#!/usr/bin/env node
// Keel runs from TypeScript sources: register tsx's loader, then hand over to the CLI.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../packages/cli/src/main.ts')
process.exitCode = await main(process.argv.slice(2))
