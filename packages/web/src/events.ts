import type { ServerFrame } from './protocol.ts'

const encoder = new TextEncoder()
const KEEPALIVE_MS = 15_000
/** A client this far behind (bytes queued and unread) is dropped; its EventSource reconnects and re-pulls the tail. */
const MAX_BACKLOG = 8 * 1024 * 1024

interface Client {
  controller: ReadableStreamDefaultController<Uint8Array>
  timer: ReturnType<typeof setInterval>
}

/** Server-sent events to every connected browser tab. Frames are JSON, one per `data:` line, in publish order. */
export class EventHub {
  private readonly clients = new Set<Client>()

  get size(): number {
    return this.clients.size
  }

  /** A new stream that starts with `first` (the hello frame) and then carries every broadcast frame. */
  open(first: ServerFrame): Response {
    let client: Client | undefined
    const stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          client = {
            controller,
            timer: setInterval(() => this.send(client!, encoder.encode(': ping\n\n')), KEEPALIVE_MS),
          }
          client.timer.unref?.()
          this.clients.add(client)
          this.send(client, encoder.encode(`: connected\n\n${frameText(first)}`))
        },
        cancel: () => {
          if (client) this.drop(client)
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
    )
    return new Response(stream, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      },
    })
  }

  broadcast(frame: ServerFrame): void {
    if (!this.clients.size) return
    const bytes = encoder.encode(frameText(frame))
    for (const client of this.clients) this.send(client, bytes)
  }

  /** Ends every stream (the host is shutting down). */
  close(): void {
    for (const client of [...this.clients]) {
      this.drop(client)
      try {
        client.controller.close()
      } catch {}
    }
  }

  private send(client: Client, bytes: Uint8Array): void {
    const backlog = client.controller.desiredSize
    if (backlog !== null && backlog < -MAX_BACKLOG) {
      this.drop(client)
      try {
        client.controller.close()
      } catch {}
      return
    }
    try {
      client.controller.enqueue(bytes)
    } catch {
      this.drop(client)
    }
  }

  private drop(client: Client): void {
    clearInterval(client.timer)
    this.clients.delete(client)
  }
}

function frameText(frame: ServerFrame): string {
  // JSON.stringify escapes every line break inside strings, so one frame is always one `data:` line.
  return `data: ${JSON.stringify(frame)}\n\n`
}
