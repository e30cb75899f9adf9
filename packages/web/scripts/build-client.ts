// `npm run build -w @keel/web`: builds the web client into client-dist/ now. `keel serve` and the tests also build
// it on demand whenever it is missing or older than src/client/.
import { clientDistDir, ensureClientBuilt } from '../src/build.ts'

await ensureClientBuilt({ force: true, log: (line) => console.log(line) })
console.log(`keel: web client built in ${clientDistDir()}`)
