// pi-tui requires koffi only on Windows, inside a try/catch, to tell Shift+Tab from Tab; without it that one key
// falls back to plain Tab. Keel does not ship koffi (see package.json), so the require fails the same way a
// missing optional dependency would.
throw new Error('koffi is not installed in Keel (replaced by a stub through npm overrides)')
