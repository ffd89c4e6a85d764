#!/usr/bin/python3
"""jinja_reference.py - renders chat templates the way transformers does, for test_chat_jinja.py.

    python jinja_reference.py [--replica] < cases.json > results.json

cases.json: {"cases": [{"template": PATH or "source": TEXT, "messages": [...],
             "tools": [...] or null, "add_generation_prompt": bool, "kwargs": {...}}, ...]}
results.json: {"renderer": "transformers X.Y.Z" or "replica (jinja2 X.Y.Z)",
               "results": [{"text": RENDERED} or {"error": MESSAGE, "raised": bool}, ...],
               "replica": the replica's results too, when the renderer is transformers}
               (raised: the template's raise_exception(MESSAGE))

With transformers importable (the hf venv's Python, G4V_HF_PYTHON) and no --replica, each case goes
through transformers' own render_jinja_template (transformers/utils/chat_template_utils.py).
Otherwise through the replica below: the same jinja2 environment (ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, loopcontrols, transformers' tojson filter, raise_exception and
strftime_now) and the same variables. template_context() is also what test_chat_jinja.py gives our
engine, so the replica and our engine see exactly the same input; where transformers is at hand the
test also checks that the replica renders as transformers does.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

# transformers' names for a message's reasoning; it fills "thinking" and "reasoning_content" from
# the first one present (_alias_reasoning_fields, transformers 5.x)
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def alias_reasoning_fields(messages):
    out = []
    for message in messages:
        reasoning = next((message[k] for k in REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


def template_context(case):
    """The variables the template sees, as transformers' render_jinja_template passes them (a JSON
    object: what test_chat_jinja.py hands our engine)."""
    return {
        "messages": alias_reasoning_fields(case["messages"]),
        "tools": case.get("tools"),
        "documents": None,
        "add_generation_prompt": bool(case.get("add_generation_prompt", False)),
        **case.get("kwargs", {}),
    }


def replica_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # jinja2's own tojson escapes HTML characters; transformers' does not
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_compiled = {}


def render_replica(env, source, case):
    if source not in _compiled:  # jinja2 compiles a Gemma template in tens of milliseconds
        _compiled[source] = env.from_string(source)
    return _compiled[source].render(**template_context(case))


def render_transformers(render_jinja_template, source, case):
    rendered, _ = render_jinja_template(
        conversations=[case["messages"]], tools=case.get("tools"), chat_template=source,
        add_generation_prompt=bool(case.get("add_generation_prompt", False)),
        **case.get("kwargs", {}))
    return rendered[0]


def render_all(cases, render):
    sources = {}
    results = []
    for case in cases:
        source = case.get("source")
        if source is None:
            path = case["template"]
            if path not in sources:
                with open(path, encoding="utf-8") as f:
                    sources[path] = f.read()
            source = sources[path]
        try:
            results.append({"text": render(source, case)})
        except Exception as e:  # noqa: BLE001 - any error is a result to compare
            # raise_exception's TemplateError is the template's own message; anything else
            # (undefined, a bad type) is jinja2's or Python's wording
            raised = type(e) is jinja2.exceptions.TemplateError
            results.append({"error": str(e) if raised else "%s: %s" % (type(e).__name__, e),
                            "raised": raised})
    return results


def main():
    cases = json.load(sys.stdin)["cases"]
    env = replica_environment()
    replica = lambda source, case: render_replica(env, source, case)  # noqa: E731
    out = {}
    if "--replica" not in sys.argv[1:]:
        try:
            import transformers
            from transformers.utils.chat_template_utils import render_jinja_template
            out["renderer"] = "transformers %s" % transformers.__version__
            out["results"] = render_all(cases, lambda source, case: render_transformers(
                render_jinja_template, source, case))
            out["replica"] = render_all(cases, replica)
        except ImportError:
            pass
    if "results" not in out:
        out["renderer"] = "replica (jinja2 %s)" % jinja2.__version__
        out["results"] = render_all(cases, replica)
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
