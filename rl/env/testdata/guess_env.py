#!/usr/bin/env python3
"""A number-guessing environment for vkgrad --env-cmd "python3 guess_env.py".

The model guesses a secret number from 1 to the row's "max" (100 without one) by calling the
tool guess; each call is answered "higher", "lower" or "correct". A correct guess ends the
episode with reward 1; after 7 turns it ends with 0.

vkgrad writes one JSON request a line to standard input and reads one reply a line from
standard output, in order. Logs go to standard error.
"""
import json
import random
import sys

TURNS = 7

TOOL = {
    "type": "function",
    "function": {
        "name": "guess",
        "description": "Guess the secret number.",
        "parameters": {
            "type": "object",
            "properties": {"number": {"type": "integer"}},
            "required": ["number"],
        },
    },
}

episodes = {}  # episode id -> {"secret", "max"}


def reset(req):
    row = req["example"] or {}
    top = int(row.get("max", 100))
    if top < 1:
        raise ValueError(f"max {top} is below 1")
    # The seed is the same for every sample of a group: they all chase the same number.
    secret = random.Random(req["seed"]).randint(1, top)
    episodes[req["episode"]] = {"secret": secret, "max": top}
    prompt = f"I am thinking of a whole number from 1 to {top}. Call the tool guess to guess it."
    return {"messages": [{"role": "user", "content": prompt}], "tools": [TOOL]}


def answer(ep, call):
    """The tool message of one call."""
    if call["name"] != "guess":
        return {"role": "tool", "content": f"unknown tool {call['name']!r}", "error": True}
    n = call["arguments"].get("number")
    if not isinstance(n, int) or isinstance(n, bool):
        return {"role": "tool", "content": "number must be an integer", "error": True}
    if n < ep["secret"]:
        return {"role": "tool", "content": "higher"}
    if n > ep["secret"]:
        return {"role": "tool", "content": "lower"}
    return {"role": "tool", "content": "correct"}


def step(req):
    ep = episodes[req["episode"]]
    messages = []
    for call in req["tool_calls"]:
        if call["name"] is None:  # the model wrote a call that did not parse
            messages.append({"role": "tool", "content": "that call did not parse", "error": True})
        else:
            messages.append(answer(ep, call))
    if not req["tool_calls"]:
        messages.append({"role": "user", "content": "Call the tool guess with a number."})
    won = any(m["content"] == "correct" for m in messages)
    done = won or req["turn"] + 1 >= TURNS
    info = {"secret": ep["secret"], "guesses": len(req["tool_calls"])}
    return {"messages": messages, "reward": 1.0 if won else 0.0, "done": done, "info": info}


def close(req):
    episodes.pop(req["episode"], None)
    return {}


HANDLERS = {"reset": reset, "step": step, "close": close}


def main():
    for line in sys.stdin:
        req = json.loads(line)
        try:
            reply = HANDLERS[req["op"]](req)
        except Exception as e:  # ends this episode only; the others go on
            print(f"episode {req.get('episode')}: {e!r}", file=sys.stderr)
            reply = {"error": f"{type(e).__name__}: {e}"}
        reply["id"] = req["id"]  # echoing the id and episode keeps replies paired
        reply["episode"] = req["episode"]
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
