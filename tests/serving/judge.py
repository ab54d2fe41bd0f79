"""Reads request bodies as the model server does, for tests/cache_salt.rs.

vLLM's and SGLang's OpenAI-compatible servers are FastAPI applications: a request body reaches
them through Starlette's Request.json(), which is json.loads of the raw bytes (so UTF-16 and
UTF-32 bodies are decoded too, and a repeated key takes its last value). A parser that keeps the
first value of a repeated key is read as well, so that the filter's guarantee holds for either.

Usage: judge.py ORIGINAL|- FORWARDED
Prints one JSON object: the top-level cache_salt of the forwarded body under last-wins and
first-wins parsing (null when absent, "unparsable" when the body is not JSON), and whether every
other top-level member equals the original's.
"""
import json
import sys


def first_wins(pairs):
    out = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


def parse(raw, hook=None):
    try:
        return json.loads(raw, object_pairs_hook=hook)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "unparsable"


def salt(doc):
    if not isinstance(doc, dict):
        return "unparsable"
    return doc.get("cache_salt")


def main():
    original_path, forwarded_path = sys.argv[1], sys.argv[2]
    forwarded = open(forwarded_path, "rb").read()
    last, first = parse(forwarded), parse(forwarded, first_wins)
    rest_equal = None
    if original_path != "-":
        original = parse(open(original_path, "rb").read())
        if isinstance(original, dict) and isinstance(last, dict):
            strip = lambda d: {k: v for k, v in d.items() if k != "cache_salt"}
            rest_equal = strip(original) == strip(last)
    print(json.dumps({"last": salt(last), "first": salt(first), "rest_equal": rest_equal}))


main()
