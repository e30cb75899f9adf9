import Schema from 'schemastery'
import { IMAGE_MAX_BYTES } from '@keel/session/image'

export interface Config {
  allowOutsideCwd: boolean
  maxReadLines: number
  maxLineChars: number
  maxReadChars: number
  maxImageBytes: number
  maxEditBytes: number
  maxGrepMatches: number
  maxGrepFileBytes: number
  maxEntries: number
  maxDiffLines: number
  timeoutMs: number
  ripgrep: string
}

export const Config: Schema<Config> = Schema.object({
  allowOutsideCwd: Schema.boolean()
    .default(false)
    .description(
      "Let the file tools touch paths outside the agent's working directory (after resolving `..` and symlinks).",
    ),
  maxReadLines: Schema.natural()
    .min(1)
    .default(2000)
    .description('Lines `read` returns when the model gives no limit.'),
  maxLineChars: Schema.natural()
    .min(1)
    .default(2000)
    .description('Longer lines are cut (read) with a marker saying so.'),
  maxReadChars: Schema.natural()
    .min(1)
    .default(100_000)
    .description('Characters one `read` result may hold; it stops early and says where to continue.'),
  maxImageBytes: Schema.natural()
    .min(1)
    .default(IMAGE_MAX_BYTES)
    .description('Largest image `read` returns (base64 of this stays under the 5 MB most providers accept).'),
  maxEditBytes: Schema.natural()
    .min(1)
    .default(10 * 1024 * 1024)
    .description('Largest file `edit` will load.'),
  maxGrepMatches: Schema.natural().min(1).default(200).description('Matching lines `grep` shows.'),
  maxGrepFileBytes: Schema.natural()
    .min(1)
    .default(10 * 1024 * 1024)
    .description('Larger files are skipped by `grep` (and counted in its result).'),
  maxEntries: Schema.natural().min(1).default(500).description('Entries `ls` and `glob` show.'),
  maxDiffLines: Schema.natural().min(1).default(120).description('Lines of the diff an `edit` result shows.'),
  timeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description(
      'Longest one file-tool call may run (a grep, a walk of a huge tree, a huge file); past it the call ends with an error saying so.',
    ),
  ripgrep: Schema.string()
    .default('rg')
    .description(
      "The ripgrep `grep` runs (on PATH); `''` for Keel's own walk and search, which it also uses when none is found.",
    ),
})
