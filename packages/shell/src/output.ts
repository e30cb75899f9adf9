/**
 * Keeps the head and the tail of a stream of output within a byte budget, counting what falls in between, so a
 * command that prints megabytes costs the model a bounded, still-useful result.
 */
export class CappedOutput {
  private head = ''
  private tail = ''
  private dropped = 0

  constructor(private readonly headLimit: number, private readonly tailLimit: number) {}

  push(text: string): void {
    if (this.head.length < this.headLimit) {
      const room = this.headLimit - this.head.length
      this.head += text.slice(0, room)
      text = text.slice(room)
    }
    if (!text) return
    this.tail += text
    if (this.tail.length > this.tailLimit) {
      const cut = this.tail.length - this.tailLimit
      this.dropped += cut
      this.tail = this.tail.slice(cut)
    }
  }

  get truncated(): number {
    return this.dropped
  }

  text(): string {
    if (!this.dropped) return this.head + this.tail
    return `${this.head}\n… [${this.dropped} characters of output cut] …\n${this.tail}`
  }
}
