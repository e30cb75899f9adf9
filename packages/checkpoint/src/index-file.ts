/** What a measure needs of a git index: how many paths it holds and the sizes git recorded for them. */
export interface IndexSizes {
  files: number
  bytes: number
}

/** And what a seed needs of one (`Shadow.seed`), read in the same pass. */
export interface IndexFigures extends IndexSizes {
  /** Every entry is one git looks at in full: stage 0, neither assume-unchanged nor skip-worktree. */
  plain: boolean
  /** Whether a `.gitattributes` is among the paths; undefined for version 4 (its paths are not rebuilt whole). */
  attributes: boolean | undefined
  /** The signatures of its extensions (`TREE`, `UNTR`, …). */
  extensions: string[]
  /** The object names of its entries but gitlinks', in hex: made when asked (a seed's copy wants them later). */
  blobs(): string[]
}

/** SHA-1 object names; an index of SHA-256 ones fails the check that the entries end where the extensions begin. */
const HASH = 20
/** Stat data (ten 32-bit fields), the object name, the flags: where an entry's path (or extended flags) begins. */
const FIXED = 40 + HASH + 2
const SIZE_AT = 36
const MODE_AT = 24
const ASSUME_VALID = 0x8000
const EXTENDED = 0x4000
const STAGE = 0x3000
/** In the extended flags (version 3 and up). */
const SKIP_WORKTREE = 0x4000
const GITLINK = 0o160000
const ATTRIBUTES = Buffer.from('.gitattributes', 'latin1')
const NAME_LENGTH = 0xfff
const DIRECTORY = 0o040000

const u32 = (b: Buffer, at: number) => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0

/**
 * Reads a git index file directly (gitformat-index, versions 2 to 4): its paths (each once, whatever its stages)
 * and their recorded sizes, leaving out paths under `without` (folders, git's spelling). Undefined for an index this
 * does not read whole (another version or hash, a sparse index's folder entries, a torn file): ask git instead.
 * `ls-files --debug` prints the same figures, but its listing of a 20,000-file index is 2.9 MB for Node to read and
 * parse on the path of the first writing tool. In a process's first measure this loop runs unoptimised: it calls
 * nothing per entry it can do without (a native call, a string per path took 20 ms of 20,000 entries; now 3).
 */
export function indexSizes(buffer: Buffer, without: readonly string[] = []): IndexFigures | undefined {
  if (buffer.length < 12 + HASH || buffer.toString('latin1', 0, 4) !== 'DIRC') return undefined
  const version = u32(buffer, 4)
  if (version < 2 || version > 4) return undefined
  const count = u32(buffer, 8)
  // Paths are held to `without` as the bytes they are (latin1 keeps one character a byte, so v4's prefix counts
  // hold), and only by their first bytes, as long as the longest folder: a made-up file's long paths cost no more.
  const folders = without.map((path) => Buffer.from(`${path}/`, 'utf8').toString('latin1'))
  const width = Math.max(0, ...folders.map((folder) => folder.length))
  const end = buffer.length - HASH
  let at = 12
  let path = ''
  /** Where the previous path lies (versions 2 and 3), its length (version 4, whose paths build on it), its stage. */
  let previousStart = 0
  let previousLength = 0
  let previousStaged = false
  let files = 0
  let bytes = 0
  let plain = true
  let attributes = false
  const objects: number[] = []
  for (let i = 0; i < count; i++) {
    if (at + FIXED > end) return undefined
    const flags = (buffer[at + FIXED - 2]! << 8) | buffer[at + FIXED - 1]!
    const extended = (flags & EXTENDED) !== 0
    if (extended && version < 3) return undefined
    const mode = u32(buffer, at + MODE_AT)
    if ((mode & 0o170000) === DIRECTORY) return undefined
    if (mode !== GITLINK) objects.push(at + 40)
    const staged = (flags & STAGE) !== 0
    if (staged || flags & ASSUME_VALID || (extended && (buffer[at + FIXED]! << 8) & SKIP_WORKTREE)) plain = false
    const start = at + FIXED + (extended ? 2 : 0)
    // A path held more than once is a conflict's stages, one after another.
    let same = false
    let next: number
    if (version === 4) {
      // A varint (git's varint.c): how many bytes of the previous path to drop, then the rest of this one.
      let p = start
      let byte = buffer[p++] ?? 0
      let strip = byte & 127
      while (byte & 128) {
        byte = buffer[p++] ?? 0
        strip = (strip + 1) * 128 + (byte & 127)
      }
      let nul = p
      while (nul < end && buffer[nul] !== 0) nul++
      if (nul >= end || strip > previousLength) return undefined
      same = staged && previousStaged && strip === 0 && nul === p
      if (width) {
        const kept = path.slice(0, previousLength - strip)
        path = kept + buffer.toString('latin1', p, Math.min(nul, p + width - kept.length))
      }
      previousLength += nul - p - strip
      next = nul + 1
    } else {
      let length = flags & NAME_LENGTH
      if (length === NAME_LENGTH) while (start + length < end && buffer[start + length] !== 0) length++
      const nul = start + length
      if (nul >= end || buffer[nul] !== 0) return undefined
      // One to eight NULs pad the entry to a multiple of eight bytes.
      next = at + ((start - at + length + 8) & ~7)
      if (next > end) return undefined
      for (let k = nul; k < next; k++) if (buffer[k] !== 0) return undefined
      same =
        staged &&
        previousStaged &&
        length === previousLength &&
        buffer.compare(buffer, previousStart, previousStart + length, start, nul) === 0
      previousStart = start
      previousLength = length
      if (width) path = buffer.toString('latin1', start, Math.min(nul, start + width))
      const name = nul - ATTRIBUTES.length
      if (
        name >= start &&
        buffer[nul - 1] === 0x73 &&
        (name === start || buffer[name - 1] === 0x2f) &&
        buffer.compare(ATTRIBUTES, 0, ATTRIBUTES.length, name, nul) === 0
      )
        attributes = true
    }
    previousStaged = staged
    if (!same && !(folders.length && folders.some((folder) => path.startsWith(folder)))) {
      files++
      bytes += u32(buffer, at + SIZE_AT)
    }
    at = next
  }
  // Then the extensions (a signature and a length each), then the checksum: anything else is misread. A split
  // index's entries are in another file (`link` names it): this one does not hold them.
  const extensions: string[] = []
  while (at + 8 <= end) {
    extensions.push(buffer.toString('latin1', at, at + 4))
    at += 8 + u32(buffer, at + 4)
  }
  if (at !== end || extensions.includes('link')) return undefined
  return {
    files,
    bytes,
    plain,
    attributes: version === 4 ? undefined : attributes,
    extensions,
    blobs: () => objects.map((offset) => buffer.toString('hex', offset, offset + HASH)),
  }
}
