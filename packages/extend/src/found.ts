// What the project and the person keep (command files, skills, agent definitions, hooks), read without the plugin:
// `keel config` and the settings resolution list them before any plugin (or cordis) is loaded.
export { type CommandSet, loadCommands } from './commands.ts'
export { loadSkills } from './skills.ts'
export { loadAgents } from './agents.ts'
export { parseHooks } from './hook-config.ts'
