#!/usr/bin/env python3
"""Tool-using transcripts for the built-in calculator environment, for supervised warm-up.

    python3 calculator_transcripts.py N [SEED] > calc.jsonl

Each line is a conversation in the shape `vkgrad sft --dataset` reads: the question the
calculator environment asks, an assistant turn calling the tool calculate in the Hermes
format, the tool's result, and the answer. The numbers are drawn as the environment draws
its own (7 to 10 digits for a sum or a difference, 4 to 6 for a product), from Python's
generator, so the problems are not the environment's.
"""
import json
import random
import sys


def problem(rnd):
    op = rnd.choice("+-*")
    digits = rnd.randint(4, 6) if op == "*" else rnd.randint(7, 10)
    a, b = (rnd.randrange(10 ** (digits - 1), 10 ** digits) for _ in range(2))
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    return f"{a} {op} {b}", str(value)


def transcript(rnd):
    expression, answer = problem(rnd)
    call = {"name": "calculate", "arguments": {"expression": expression}}
    return {"messages": [
        {"role": "user", "content": f"What is {expression}? Reply with the exact answer as a number."},
        {"role": "assistant", "content": "<tool_call>" + json.dumps(call) + "</tool_call>"},
        {"role": "tool", "content": answer},
        {"role": "assistant", "content": answer},
    ]}


def main():
    n = int(sys.argv[1])
    rnd = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    for _ in range(n):
        print(json.dumps(transcript(rnd)))


if __name__ == "__main__":
    main()
