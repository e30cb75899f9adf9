/**
 * Keeps the head and the tail of a stream of output within a byte budget, counting what falls in between, so a
 * command that prints megabytes costs the model a bounded, still-useful result. Cuts never split a surrogate pair.
 */
export class CappedOutput {
  private head = ''
  private headFull = false
  private tail = ''
  private dropped = 0

  constructor(
    private readonly headLimit: number,
    private readonly tailLimit: number,
  ) {}

  push(text: string): void {
    if (!this.headFull) {
      let room = this.headLimit - this.head.length
      if (room < text.length && isHighSurrogate(text.charCodeAt(room - 1))) room--
      this.head += text.slice(0, room)
      text = text.slice(room)
      if (!text) return
      this.headFull = true
    }
    this.tail += text
    if (this.tail.length > this.tailLimit) {
      let cut = this.tail.length - this.tailLimit
      if (isLowSurrogate(this.tail.charCodeAt(cut))) cut++
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

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff
