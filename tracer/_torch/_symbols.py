"""Every private torch symbol dynascope uses, as "module:attr" strings.

Invariant: any ``torch._*`` attribute used under ``tracer/_torch/`` is listed here, so
``tests/test_torch_compat.py`` names the missing one after a torch upgrade.
"""

PRIVATE_SYMBOLS: list[str] = [
    # fx_graph.py
    "torch._ops:OpOverload",
    "torch._ops:OpOverloadPacket",
    "torch._ops:HigherOrderOperator",
]
