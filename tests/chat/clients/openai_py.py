"""openai_py.py SPEC - the official OpenAI client for Python (PyPI `openai`, pinned in
requirements.txt beside this file, installed by scripts/install-py-client.sh) against
`g4v serve --lm`, for tests/chat/test_chat_structured.py. SPEC (JSON) names the server, an image
(a data: URI) and the seeds; every result is printed as one JSON object per line.

  {"op": "parse", ...}   chat.completions.parse with a pydantic model as response_format, for
                         each seed: message.parsed must be that model's instance; and
                         chat.completions.stream with the same model: the streamed text equals
                         the non-streamed one and parses too
  {"op": "tools", ...}   a declared function with tool_choice naming it: tool_calls parsed by
                         pydantic_function_tool (parsed_arguments), then the round trip: the
                         call and the tool's result sent back, and the model's next answer
A failure of the client is printed as {"error": name, "status": HTTP status, "message"}.
"""
import json
import sys
from typing import List, Literal

import openai
import pydantic
from pydantic import BaseModel, Field


class LineItem(BaseModel):
    sku: str = Field(max_length=12)
    quantity: int = Field(ge=1, le=99)


class Invoice(BaseModel):
    vendor: str = Field(max_length=24)
    currency: Literal["EUR", "USD", "GBP"]
    paid: bool
    items: List[LineItem] = Field(max_length=3)


class GetWeather(BaseModel):
    """Looks up the weather at a place."""
    city: Literal["Paris", "Oslo", "Lima"]  # no free string: see test_chat_structured.py
    unit: Literal["celsius", "fahrenheit"]
    days: int = Field(ge=1, le=7)


def messages(spec, text):
    return [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": spec["image"]}},
        {"type": "text", "text": text}]}]


def op_parse(c, spec):
    for seed in spec["seeds"]:
        kw = dict(model="g4v", messages=messages(spec, "Read this invoice."), seed=seed,
                  max_tokens=spec.get("max_tokens", 600), response_format=Invoice)
        r = c.chat.completions.parse(**kw)
        m = r.choices[0].message
        parsed_ok = isinstance(m.parsed, Invoice)
        with c.chat.completions.stream(**kw) as s:
            for _ in s:
                pass
            final = s.get_final_completion()
        sm = final.choices[0].message
        print(json.dumps({"seed": seed, "content": m.content, "parsed": parsed_ok,
                          "finish_reason": r.choices[0].finish_reason,
                          "stream_content": sm.content,
                          "stream_parsed": isinstance(sm.parsed, Invoice)}), flush=True)


def op_tools(c, spec):
    tool = openai.pydantic_function_tool(GetWeather)
    for seed in spec["seeds"]:
        msgs = messages(spec, "What is the weather where this photo was taken?")
        r = c.chat.completions.parse(model="g4v", messages=msgs, seed=seed, max_tokens=300,
                                     tools=[tool],
                                     tool_choice={"type": "function",
                                                  "function": {"name": "GetWeather"}})
        ch = r.choices[0]
        calls = ch.message.tool_calls or []
        out = {"seed": seed, "finish_reason": ch.finish_reason, "n_calls": len(calls),
               "names": [t.function.name for t in calls],
               "arguments": [t.function.arguments for t in calls],
               "parsed": [isinstance(t.function.parsed_arguments, GetWeather) for t in calls]}
        if calls:  # the round trip: the call and its result go back, the model answers
            msgs.append(ch.message.model_dump(exclude_none=True, exclude={"parsed"}))
            msgs.append({"role": "tool", "tool_call_id": calls[0].id,
                         "content": json.dumps({"temperature": 21, "sky": "clear"})})
            r2 = c.chat.completions.create(model="g4v", messages=msgs, seed=seed,
                                           max_tokens=20, tools=[tool], tool_choice="none",
                                           extra_body={"g4v": {"debug_prompt": True}})
            out["followup_finish"] = r2.choices[0].finish_reason
            out["followup_prompt"] = r2.model_extra["g4v"]["prompt"]["text"]
        print(json.dumps(out), flush=True)


def main():
    spec = json.loads(sys.argv[1])
    c = openai.OpenAI(api_key=spec.get("key") or "none", base_url=spec["url"] + "/v1",
                      max_retries=0, timeout=600)
    try:
        {"parse": op_parse, "tools": op_tools}[spec["op"]](c, spec)
    except (openai.OpenAIError, pydantic.ValidationError) as e:
        print(json.dumps({"error": type(e).__name__, "status": getattr(e, "status_code", None),
                          "message": str(e)[:2000]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
