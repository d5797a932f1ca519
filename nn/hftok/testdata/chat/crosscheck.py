"""Renders cases.json with templates.json through Python's Jinja2 set up as transformers'
apply_chat_template sets it up, and compares with goldens.json. Run from this folder:
    python3 crosscheck.py
"""
import json
import sys
from datetime import datetime

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise TemplateError(message)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)

templates = json.load(open("templates.json"))
cases = {c["name"]: c for c in json.load(open("cases.json"))}
failed = 0
goldens = json.load(open("goldens.json"))["goldens"]
for g in goldens:
    c, name = cases[g["case"]], g["template"]
    llama = name.startswith("llama")
    context = dict(messages=c["messages"], tools=c.get("tools"), add_generation_prompt=c["add_generation_prompt"],
                   bos_token="<|begin_of_text|>" if llama else None, eos_token="<|eot_id|>" if llama else "<|im_end|>")
    for key in ("date_string", "tools_in_user_message"):
        if key in c:
            context[key] = c[key]
    if name == "llama3.2" and "date_string" not in context:
        context["date_string"] = "15 Mar 2025"
    try:
        got, err = env.from_string(templates[name]).render(**context), None
    except Exception as e:
        got, err = None, e
    if got != g.get("text"):
        failed += 1
        print(f"{name} {g['case']!r}: jinja2 gives {got!r} ({err}), @huggingface/jinja {g.get('text')!r}")
print(f"{len(goldens) - failed} of {len(goldens)} renderings agree")
sys.exit(1 if failed else 0)
