"""Cases for the oracle test (tests/test_oracle.py): each mechanism of the fidelity contract, written
the way PyTorch's own Dynamo/HOP tests write them (small module-level functions, fixed inputs).

``ORACLE_CASES[name]()`` returns ``(fn, args, options)``: ``tracer.capture(fn, *args, **options)``;
options are limited to ``more_calls``, ``fullgraph``, ``dynamic``, ``capture_scalar_outputs`` and
``dynamo_config``, which the plain ``torch.compile`` run of tests/oracle_child.py mirrors. The shared
capture cases of tests/cases.py are included too.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import torch
from cases import CASES
from cases_inputs import DYNAMIC, INPUT_CASES
from torch._higher_order_ops.wrap import wrap


def _t(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def print_break(x):
    y = x.sin()
    print("graph break")  # noqa: T201 - the break under test
    return y.cos()


def loop_break(x):
    for _ in range(3):
        x = x + 1
        torch._dynamo.graph_break()
    return x


def resume_without_ops(x):
    y = x.sin()
    torch._dynamo.graph_break()
    z = [1, 2]
    z.append(3)
    return y, z


_LOG = logging.getLogger("dynascope.oracle")


def _note(msg: str) -> None:
    _LOG.debug(msg)  # a graph break: Dynamo does not trace logging.Logger methods


def logging_breaks(x):  # two breaks at one line, one cause; only the call's argument differs
    x = x + 1
    _note("one")
    x = x * 2
    _note("two")
    return x.sin()


def item_break(x):
    n = x.sum().item()  # a graph break without capture_scalar_outputs
    return x * n


def cond_break_fullgraph(x):
    def true_fn(y):
        torch._dynamo.graph_break()
        return y.sin()

    return torch.cond(x.sum() > 0, true_fn, lambda y: y.cos(), (x,))


def wrap_break(x):
    def body(y):
        torch._dynamo.graph_break()
        return y.sin()

    return wrap(body, x).cos()


@torch.compiler.nested_compile_region
def _region(a):
    return a.sin() * 2


def region_once(x):
    return _region(x) + 1


def region_twice(x, y):
    return _region(x) + _region(y)


def two_breaks(x):
    x = x.sin()
    torch._dynamo.graph_break()
    x = x.cos()
    torch._dynamo.graph_break()
    return x.tanh()


class Scaled(torch.nn.Module):
    """A user module whose hooks add ops: torch.compile(module) runs them through __call__."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) * 3


def _closure_over(y: torch.Tensor) -> Callable:
    def closure_root(x):
        return x * y  # ``y`` is a closure variable: a graph input Dynamo reads as L['y'], not an argument

    return closure_root


def specialize_size(x):
    if x.shape[0] == 4:  # a guard Eq(s77, 4): ShapeEnv makes the size static here
        return x * 2
    return x + 1


def guard_on_str(x, s):
    return x * len(s)  # a guard s == '...' that every new string fails (cf. PyTorch's test_recompile_ux.py)


def model_add_self(input):
    return input + input  # PyTorch's test_recompile_ux.py test_dynamic_input: a new batch size per call


def clamp_then_break(x, y):
    z = x.clamp(min=y)  # a float input, unspecialized on its second value (cf. PyTorch's test_unspec.py):
    torch._dynamo.graph_break()  # AOTAutograd cannot tensorify it as clamp's bound -> a second restart
    return z


def raises_after_giving_up(x):
    # Dynamo cannot trace ``open`` (a graph break with no ops before it: no graph); the call then
    # raises in the user's own code, after torch logged the attempt as finished
    return open(f"/nonexistent/{x.numel()}")  # noqa: SIM115 - never opens


def _intermediate_hook(scale: torch.Tensor) -> Callable:
    def hooked(x):  # cf. PyTorch's test_hooks.py intermediary-hook tests: a hook on a value made in the graph
        y = x + 1
        y.register_hook(lambda grad: grad * scale)  # ``scale`` captured: lifted into hook_body_0
        return y * 2

    return hooked


def _hooked(module: torch.nn.Module) -> torch.nn.Module:
    module.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    module.register_forward_hook(lambda mod, args, out: out.relu())
    return module


def _seeded(make: Callable[[], Any]) -> Any:
    torch.manual_seed(0)
    return make()


def _case(fn: Callable, *args: Any, **options: Any) -> Callable[[], tuple]:
    return lambda: (fn, args, options)


ORACLE_CASES: dict[str, Callable[[], tuple]] = {
    "print_break": _case(print_break, _t(3)),
    "loop_break": _case(loop_break, _t(3)),
    "resume_without_ops": _case(resume_without_ops, _t(3)),
    "item_break": _case(item_break, _t(3)),
    "logging_breaks": _case(logging_breaks, _t(3)),
    "wrap_break": _case(wrap_break, _t(3)),
    "two_breaks": _case(two_breaks, _t(3)),
    "recompile_twice": _case(lambda x: x * 2, _t(3), more_calls=[(_t(4),), (_t(5),)]),
    "region_once": _case(region_once, _t(3)),
    "region_twice": _case(region_twice, _t(3), _t(3, seed=1)),
    "cond_break_fullgraph": _case(cond_break_fullgraph, _t(3)),
    "linear_with_hooks": lambda: (_seeded(lambda: _hooked(torch.nn.Linear(3, 3))), (_t(2, 3),), {}),
    "sequential": lambda: (_seeded(lambda: torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())), (_t(2, 3),), {}),
    "recompile_each_call": _case(guard_on_str, _t(3), "a", more_calls=[(_t(3), "bb"), (_t(3), "ccc"), (_t(3), "dddd")]),
    "closure_root": lambda: (_closure_over(_t(3, seed=1)), (_t(3),), {}),
    "specialize_size": _case(specialize_size, _t(4), dynamic=True),
    "user_module_with_hooks": lambda: (_seeded(lambda: _hooked(Scaled())), (_t(2, 3),), {}),
    # the third compile is refused by recompile_limit: torch names no code object for it
    "recompile_limit_hit": _case(model_add_self, _t(1, 3, 4), more_calls=[(_t(2, 3, 4),), (_t(3, 3, 4),), (_t(4, 3, 4),)],
                                 dynamo_config={"recompile_limit": 2, "automatic_dynamic_shapes": False}),
    # 0/1 restarts twice: at the graph break, then with TensorifyScalarRestartAnalysis
    "break_then_tensorify_restart": _case(clamp_then_break, _t(2), 2.5, more_calls=[(_t(2), 3.5)]),
    "raises_after_giving_up": _case(raises_after_giving_up, _t(2)),
    "intermediate_hook": lambda: (_intermediate_hook(_t(3, seed=1)), (_t(3).requires_grad_(),), {}),
}
for _name, _make in INPUT_CASES.items():  # the body-input cases of tests/cases_inputs.py
    def _input_case(make=_make, dynamic=_name in DYNAMIC):
        fn, args = make()
        return fn, args, {"dynamic": True} if dynamic else {}
    ORACLE_CASES[f"inputs_{_name}"] = _input_case
OPTIONS = ("more_calls", "fullgraph", "dynamic", "capture_scalar_outputs", "dynamo_config")
for _name, _make in CASES.items():
    ORACLE_CASES.setdefault(_name, _make)
