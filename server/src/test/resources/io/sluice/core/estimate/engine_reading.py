# The engine's reading of request bodies, for BodyReadingDifferentialTest: Python's json (as
# Starlette's request.json() calls it, on the bytes) then pydantic in lax mode (FastAPI validates
# the dict), as vLLM and SGLang read a request. One body per line, hex; one JSON line out per body.
import binascii
import json
import sys
from typing import Optional

from pydantic import BaseModel, ConfigDict


class Body(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: Optional[str] = None
    stream: Optional[bool] = None
    max_tokens: Optional[int] = None
    max_completion_tokens: Optional[int] = None
    max_output_tokens: Optional[int] = None
    n: Optional[int] = None
    best_of: Optional[int] = None
    tools: Optional[list] = None
    functions: Optional[list] = None
    parallel_tool_calls: Optional[bool] = None
    priority: Optional[float] = None


def big(v):
    # ints beyond a long travel as strings
    return v if v is None or abs(v) < 2**62 else str(v)


for line in sys.stdin:
    raw = binascii.unhexlify(line.strip())
    try:
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        b = Body.model_validate(doc)
    except Exception:
        print(json.dumps({"refused": True}))
        continue
    print(
        json.dumps(
            {
                "refused": False,
                "model": b.model,
                "stream": b.stream,
                "max_tokens": big(b.max_tokens),
                "max_completion_tokens": big(b.max_completion_tokens),
                "max_output_tokens": big(b.max_output_tokens),
                "n": big(b.n),
                "best_of": big(b.best_of),
                "tools": None if b.tools is None else len(b.tools),
                "functions": None if b.functions is None else len(b.functions),
                "parallel_tool_calls": b.parallel_tool_calls,
                "priority": None if b.priority is None else str(b.priority),
            }
        )
    )
