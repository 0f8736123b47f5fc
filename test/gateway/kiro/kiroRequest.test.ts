import { describe, expect, it } from "vitest"
import { filterListing, offeredModels } from "../../../src/gateway/kiro/KiroModelList.ts"
import { modelIdOf, queryWithProfileArn, withProfileArn } from "../../../src/gateway/kiro/KiroRequest.ts"

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (data: Uint8Array) => new TextDecoder().decode(data)

describe("withProfileArn", () => {
  it("inserts the ARN as the first member and keeps every byte the client sent", () => {
    const body = `  {\n "conversationState" : {"a":1} }`
    const out = text(withProfileArn(bytes(body), JSON.parse(body), "arn:x"))
    expect(out).toBe(`  {"profileArn":"arn:x",\n "conversationState" : {"a":1} }`)
    expect(JSON.parse(out)).toEqual({ profileArn: "arn:x", conversationState: { a: 1 } })
    expect(text(withProfileArn(bytes("{ }"), {}, "arn:\"q\""))).toBe(`{"profileArn":"arn:\\"q\\"" }`)
    expect(JSON.parse(text(withProfileArn(bytes("{ }"), {}, "arn:\"q\"")))).toEqual({ profileArn: "arn:\"q\"" })
  })

  it("leaves the body alone when the client sent one, or there is none to add", () => {
    const body = bytes(`{"profileArn":"mine","x":1}`)
    expect(withProfileArn(body, { profileArn: "mine", x: 1 }, "arn:x")).toBe(body)
    expect(withProfileArn(bytes("{}"), {}, undefined)).toEqual(bytes("{}"))
  })
})

describe("queryWithProfileArn", () => {
  it("appends the ARN, keeping the client's own parameters as sent", () => {
    expect(queryWithProfileArn("", "arn:a/b")).toBe("?profileArn=arn%3Aa%2Fb")
    expect(queryWithProfileArn("?origin=AI_EDITOR&x=a%20b", "arn")).toBe("?origin=AI_EDITOR&x=a%20b&profileArn=arn")
    expect(queryWithProfileArn("?profileArn=mine", "arn")).toBe("?profileArn=mine")
    expect(queryWithProfileArn("?a=1", undefined)).toBe("?a=1")
  })
})

describe("modelIdOf", () => {
  it("reads conversationState.currentMessage.userInputMessage.modelId only", () => {
    expect(modelIdOf({ conversationState: { currentMessage: { userInputMessage: { modelId: "m" } } } })).toBe("m")
    expect(modelIdOf({ modelId: "m" })).toBeUndefined()
    expect(modelIdOf({ conversationState: { currentMessage: { userInputMessage: { modelId: 3 } } } })).toBeUndefined()
  })
})

describe("filterListing", () => {
  const listing = {
    models: [{ modelId: "a", extra: 1 }, { modelId: "b" }, { name: "no id" }],
    defaultModel: { modelId: "b" },
    nextToken: "n"
  }
  it("offers every model id, the default included", () => {
    expect(offeredModels(listing)).toEqual(["a", "b"])
  })
  it("a defaultModel given as a bare string is offered and filtered like one given as an object", () => {
    const bare = { models: [{ modelId: "a" }], defaultModel: "b" }
    expect(offeredModels(bare)).toEqual(["a", "b"])
    expect(filterListing(bare, new Set(["a"]))).toEqual({ models: [{ modelId: "a" }] })
    expect(filterListing(bare, new Set(["a", "b"]))).toEqual(bare)
  })
  it("removes refused models (and entries without an id), the default when refused, and keeps the rest", () => {
    expect(filterListing(listing, new Set(["a"]))).toEqual({ models: [{ modelId: "a", extra: 1 }], nextToken: "n" })
    expect(filterListing(listing, new Set(["a", "b"]))).toEqual({
      ...listing,
      models: [{ modelId: "a", extra: 1 }, { modelId: "b" }]
    })
  })
})
