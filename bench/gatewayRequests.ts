/**
 * What the gateway child of `bench/gateway.ts` accepts (its fixed-answer key service knows this
 * organization and service key) and the chat request every gateway benchmark sends it, so the A/B
 * (`bench/gateway-ab.ts`) measures the same requests as the whole bench.
 */
export const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
export const SERVICE_KEY = "vdb_sk_benchServiceKey000000000000000000000000000"

export const requestBody = (stream: boolean) =>
  JSON.stringify({
    model: "gpt-4.1-mini",
    messages: [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "Say hello in one short sentence, please." }
    ],
    temperature: 0.2,
    ...(stream ? { stream: true } : {})
  })
