/**
 * What a background job printed since its last read, within a budget: the newest characters are kept and the
 * oldest dropped (counted), so a job that floods its output costs bounded memory and a bounded `job_output`.
 */
export class UnreadOutput {
  private chunks: string[] = []
  private size = 0
  private dropped = 0

  constructor(private readonly limit: number) {}

  push(text: string): void {
    this.chunks.push(text)
    this.size += text.length
    while (this.size > this.limit) {
      const first = this.chunks[0]!
      const over = this.size - this.limit
      if (first.length <= over) {
        this.chunks.shift()
        this.size -= first.length
        this.dropped += first.length
      } else {
        this.chunks[0] = first.slice(over)
        this.size -= over
        this.dropped += over
      }
    }
  }

  /** Everything unread, and how many characters were dropped before it; the buffer is empty afterwards. */
  take(): { text: string; dropped: number } {
    const taken = { text: this.chunks.join(''), dropped: this.dropped }
    this.chunks = []
    this.size = 0
    this.dropped = 0
    return taken
  }
}
