// Helpers shared by the adapter tests: drain a stream, fold it, or catch the LlmError it ends with.
import { expect } from 'vitest'
import { LlmError, MessageAssembler, type LlmRequest, type StreamChunk } from '../src/index.ts'

export const hello: LlmRequest = {
  system: 'You are terse.',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  tools: [],
}

export async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

export function assemble(chunks: StreamChunk[]): MessageAssembler {
  const assembler = new MessageAssembler()
  for (const chunk of chunks) assembler.push(chunk)
  return assembler
}

export async function failure(stream: AsyncIterable<StreamChunk>, seen: StreamChunk[] = []): Promise<LlmError> {
  try {
    for await (const chunk of stream) seen.push(chunk)
  } catch (error) {
    expect(error).toBeInstanceOf(LlmError)
    return error as LlmError
  }
  throw new Error('expected the stream to fail')
}
