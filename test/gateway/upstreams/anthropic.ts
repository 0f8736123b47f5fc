/** Anthropic wire-format answers (messages, count_tokens), JSON and SSE frames. */

export const anthropicMessage = (model: string) => ({
  id: "msg_fake_1",
  type: "message",
  role: "assistant",
  model,
  content: [{ type: "text", text: "Hello from the fake Anthropic." }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 5, output_tokens: 7 }
})

export const countTokens = () => ({ input_tokens: 42 })

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`

export const anthropicStream = (model: string): ReadonlyArray<string> => [
  event("message_start", {
    type: "message_start",
    message: {
      ...anthropicMessage(model),
      content: [],
      stop_reason: null,
      usage: { input_tokens: 5, output_tokens: 0 }
    }
  }),
  event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } }),
  event("content_block_delta", {
    type: "content_block_delta",
    index: 0,
    delta: { type: "text_delta", text: " there" }
  }),
  event("content_block_stop", { type: "content_block_stop", index: 0 }),
  event("message_delta", {
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 2 }
  }),
  event("message_stop", { type: "message_stop" })
]
