"""Torch's own recording of the oracle cases, run in a fresh process (see tests/test_oracle.py).

Usage: ``TORCH_TRACE=<dir> python oracle_child.py <out.json> <case> ...``. Each case runs under a
plain ``torch.compile`` whose backend records the GraphModule torch hands it (node names and ops,
the readable code exactly as Dynamo logs it, every HOP body) and then compiles it like
``aot_eager``; a ``dynascope_oracle_case`` artifact in the structured trace marks where each case
starts, so the test can split the TORCH_TRACE log by case. Nothing here imports dynascope.
"""

from __future__ import annotations

import json
import os
import sys

import torch
from torch._dynamo import convert_frame
from torch._dynamo.backends.debugging import aot_eager
from torch._guards import CompileContext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from oracle_cases import ORACLE_CASES  # noqa: E402


def _bodies(gm: torch.fx.GraphModule, prefix: str = "") -> dict[str, dict]:
    out: dict[str, dict] = {}
    for n in gm.graph.nodes:
        if n.op != "get_attr":
            continue
        sub = getattr(gm, n.target, None)
        if not isinstance(sub, torch.fx.GraphModule):
            continue
        name = f"{prefix}.{n.target}" if prefix else n.target
        callers = [u.name for u in gm.graph.nodes if n in u.all_input_nodes and u.op == "call_function"]
        if name not in out:
            out[name] = {"parent": prefix, "placeholders": [p.name for p in sub.graph.nodes if p.op == "placeholder"],
                         "callers": callers}
            out.update(_bodies(sub, name))
        else:
            out[name]["callers"].extend(c for c in callers if c not in out[name]["callers"])
    return out


def main(out_path: str, names: list[str]) -> None:
    results: dict[str, list] = {}
    for name in names:
        # Each case as in a fresh process: torch's shared code (wrap_inline's ``inner`` for torch's own
        # modules) must not carry cache entries or a recompile count from the previous case.
        # reset() also restarts frame ids at 0; keep counting so every id in the one log stays unique.
        frames = convert_frame.FRAME_COUNTER
        torch._dynamo.reset()
        convert_frame.FRAME_COUNTER = frames
        torch._logging.trace_structured("artifact", metadata_fn=lambda: {"name": "dynascope_oracle_case", "encoding": "string"},
                                        payload_fn=lambda name=name: name)
        calls: list[dict] = []

        def oracle(gm, example_inputs, calls=calls):
            tid = CompileContext.current_trace_id()
            calls.append({
                "id": [tid.compile_id.frame_id, tid.compile_id.frame_compile_id, tid.attempt],
                "nodes": [[n.name, n.op] for n in gm.graph.nodes],
                "code": gm.print_readable(print_output=False, include_stride=True, include_device=True),
                "bodies": _bodies(gm),
            })
            return aot_eager(gm, example_inputs)

        fn, args, options = ORACLE_CASES[name]()
        config = {"capture_scalar_outputs": True} if options.get("capture_scalar_outputs") else {}
        config.update(options.get("dynamo_config", {}))
        with torch._dynamo.config.patch(**config):
            compiled = torch.compile(fn, backend=oracle, fullgraph=options.get("fullgraph", False),
                                     dynamic=options.get("dynamic"))
            try:
                compiled(*args)
                for more in options.get("more_calls", ()):
                    compiled(*more)
            except Exception as e:  # a case that fails to compile records that it raised
                calls.append({"raised": type(e).__name__})
        results[name] = calls
    with open(out_path, "w") as fh:
        json.dump(results, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
