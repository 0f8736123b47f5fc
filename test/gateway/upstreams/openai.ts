/** OpenAI wire-format answers (chat completions and responses), JSON and SSE frames. */

export const chatCompletion = (model: string) => ({
  id: "chatcmpl-fake-1",
  object: "chat.completion",
  created: 1_700_000_000,
  model,
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Hello from the fake upstream." },
    finish_reason: "stop"
  }],
  usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 }
})

const chunk = (model: string, delta: Record<string, unknown>, finish: string | null) =>
  `data: ${
    JSON.stringify({
      id: "chatcmpl-fake-1",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }]
    })
  }\n\n`

export const chatStream = (model: string): ReadonlyArray<string> => [
  chunk(model, { role: "assistant", content: "" }, null),
  chunk(model, { content: "Hello" }, null),
  chunk(model, { content: " wörld ✓" }, null),
  chunk(model, {}, "stop"),
  "data: [DONE]\n\n"
]

export const response = (model: string) => ({
  id: "resp_fake_1",
  object: "response",
  created_at: 1_700_000_000,
  status: "completed",
  model,
  output: [{
    type: "message",
    id: "msg_fake_1",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: "Hello from responses.", annotations: [] }]
  }],
  usage: { input_tokens: 5, output_tokens: 4, total_tokens: 9 }
})

export const responsesStream = (model: string): ReadonlyArray<string> => [
  `event: response.created\ndata: ${
    JSON.stringify({
      type: "response.created",
      sequence_number: 0,
      response: { ...response(model), status: "in_progress", output: [] }
    })
  }\n\n`,
  `event: response.output_text.delta\ndata: ${
    JSON.stringify({
      type: "response.output_text.delta",
      sequence_number: 1,
      item_id: "msg_fake_1",
      output_index: 0,
      content_index: 0,
      delta: "Hello"
    })
  }\n\n`,
  `event: response.completed\ndata: ${
    JSON.stringify({ type: "response.completed", sequence_number: 2, response: response(model) })
  }\n\n`
]
