"""openai_responses.py SPEC - the official OpenAI client for Python (PyPI `openai`, pinned in
requirements.txt beside this file) against `g4v serve --lm`'s Responses API, for
tests/chat/test_chat_openai.py. SPEC (JSON): {"url", "image"}; prints one JSON object with what
each call returned:
  text       client.responses.create(input="...", instructions=..., max_output_tokens=...)
  image      input items: a user message with input_text and input_image parts
  cut        max_output_tokens reached: status and incomplete_details
  schema     text.format json_schema: output_text and the parsed JSON
  tools      a function tool with tool_choice required: the function_call item; then the call
             and a function_call_output sent back: the next answer
  stream     client.responses.stream(...): the event types in order, the text of the deltas
             joined, and the last event's response (completed or, cut, incomplete)
A failure of the client is printed as {"error": name, "message"}.
"""
import json
import sys

import openai


def main():
    spec = json.loads(sys.argv[1])
    c = openai.OpenAI(base_url=spec["url"] + "/v1", api_key="none", max_retries=0, timeout=300)
    # the synthetic model answers <channel|> again and again unless it is banned (no text)
    x = {"extra_body": {"logit_bias": {"101": -100}}}
    out = {}
    try:
        r = c.responses.create(model="g4v", instructions="Be brief.", input="Say hi.",
                               max_output_tokens=8, temperature=0, **x)
        out["text"] = {"output_text": r.output_text, "status": r.status, "id": r.id,
                       "object": r.object, "usage": r.usage.model_dump(),
                       "types": [o.type for o in r.output]}
        r = c.responses.create(model="g4v", temperature=0, max_output_tokens=6, input=[
            {"role": "user", "content": [{"type": "input_image", "image_url": spec["image"]},
                                         {"type": "input_text", "text": "What is this?"}]}], **x)
        out["image"] = {"output_text": r.output_text, "usage": r.usage.model_dump()}
        r = c.responses.create(model="g4v", input="Tell me a long story.", max_output_tokens=3,
                               temperature=0, **x)
        out["cut"] = {"status": r.status,
                      "reason": r.incomplete_details.reason if r.incomplete_details else None}
        schema = {"type": "object", "additionalProperties": False,
                  "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]},
                                 "count": {"type": "integer", "minimum": 0, "maximum": 9}},
                  "required": ["colour", "count"]}
        r = c.responses.create(model="g4v", input="Pick a colour and a count.", temperature=0,
                               max_output_tokens=40, text={"format": {
                                   "type": "json_schema", "name": "pick", "schema": schema,
                                   "strict": True}})
        out["schema"] = {"output_text": r.output_text, "parsed": json.loads(r.output_text)}
        tool = {"type": "function", "name": "get_weather", "description": "The weather",
                "parameters": {"type": "object", "additionalProperties": False,
                               "properties": {"city": {"type": "string",
                                                       "enum": ["Paris", "Oslo"]}},
                               "required": ["city"]}, "strict": True}
        q = [{"role": "user", "content": "Weather in Oslo?"}]
        r = c.responses.create(model="g4v", input=q, tools=[tool], tool_choice="required",
                               temperature=0, max_output_tokens=40, parallel_tool_calls=False)
        calls = [o for o in r.output if o.type == "function_call"]
        out["tools"] = {"calls": [{"name": x.name, "arguments": json.loads(x.arguments),
                                   "call_id": x.call_id} for x in calls]}
        if calls:
            q2 = q + [{"type": "function_call", "call_id": calls[0].call_id,
                       "name": calls[0].name, "arguments": calls[0].arguments},
                      {"type": "function_call_output", "call_id": calls[0].call_id,
                       "output": "{\"temperature\": 4}"}]
            r2 = c.responses.create(model="g4v", input=q2, tools=[tool], temperature=0,
                                    max_output_tokens=8, **x)
            out["tools"]["after"] = {"status": r2.status, "types": [o.type for o in r2.output],
                                     "output_text": r2.output_text}
        types, deltas, final = [], [], None
        with c.responses.stream(model="g4v", instructions="Be brief.", input="Say hi.",
                                max_output_tokens=8, temperature=0, **x) as st:
            for ev in st:
                types.append(ev.type)
                if ev.type == "response.output_text.delta":
                    deltas.append(ev.delta)
                if ev.type in ("response.completed", "response.incomplete"):
                    final = ev.response  # get_final_response() takes only a completed one
        out["stream"] = {"types": types, "deltas": "".join(deltas),
                         "output_text": final.output_text if final else None,
                         "status": final.status if final else None}
    except openai.APIError as e:
        out["error"] = type(e).__name__
        out["message"] = str(e)[:500]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
