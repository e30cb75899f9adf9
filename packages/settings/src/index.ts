export { projectRoot, projectDirs } from './root.ts'
export { loadInstructions, INSTRUCTIONS_LIMIT, type Instructions, type InstructionFile } from './instructions.ts'
export {
  readSettingsFile,
  readSettingsFiles,
  settingsPaths,
  SettingsError,
  type Settings,
  type SettingsFile,
} from './files.ts'
export { mergeLayers, flatten, type Layer, type Merged, type Source } from './merge.ts'
export { PROTECTED_PATHS, protectedEntries, protectedMatch, protectedTargets, unreadableTargets } from './protected.ts'
export {
  gateSettings,
  heldLine,
  keepTrustAfter,
  trustFolder,
  trustForThisRun,
  trustOffer,
  trustState,
  TRUSTED_PATHS,
  type HeldSetting,
  type TrustOffer,
  type TrustState,
} from './trust.ts'
export { settingsSnapshot, type SettingsSnapshot } from './snapshot.ts'
