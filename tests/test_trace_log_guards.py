"""tracer.trace_log.guards on guard text as torch 2.13 logs it: the C++ guard tree
(``dynamo_cpp_guards_str``, torch/_dynamo/guards.py ``GuardManagerWrapper.__str__``) and ``dynamo_guards``.

The trees are cut from TORCH_TRACE logs of small programs (a closure over a global, a recompile on a
new size, a dict passed in and iterated over); file paths shortened to /home/u/t.py (torch prints the
last characters of a path, hence "mp/u/t.py").
"""

from __future__ import annotations

from tracer.model.frame import Frame
from tracer.model.lazy import peek, pending
from tracer.trace_log.events import AttemptLog, LogState
from tracer.trace_log.guards import cpp_tree, fill_guards

ST = LogState({0: "/venv/torch/_dynamo/convert_frame.py", 1: "/home/u/t.py"})


def _frame() -> Frame:
    return Frame(compile_id="0/0", code="t.py:3 in f")


TREE = '''
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # _dynamo/output_graph.py:1135 in init_ambient_guards
| +- TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:1122 in init_ambient_guards
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, size=[3], stride=[1])  # return x + y0  # mp/u/t.py:5 in clos
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_dynamic_indices') == False           # return x + y0  # mp/u/t.py:5 in clos
| | +- NO_TENSOR_ALIASING: check_no_aliasing(L['x'], G['y0'])
| +- GuardManager: source=G, accessed_by=GlobalsGuardAccessor, type=<class 'dict'>, tag_safe=(False, False)
| | +- GuardManager: source=G['y0'], accessed_by=DictGetItemGuardAccessor('y0'), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | | +- NO_TENSOR_ALIASING
| | +- DictGuardManager: source=G['d'], accessed_by=DictGetItemGuardAccessor('d'), type=<class 'dict'>, tag_safe=(False, False)
| | | +- KeyValueManager pair at index=0
| | | | +- ID_MATCH: ___check_obj_id(G['d'], 9)  # y = d['k']  # mp/u/t.py:6 in clos
| | +- ID_MATCH: ___check_obj_id(G['clos'].__code__, 139651522331296), type=<class 'code'>  # torch.compile(lambda x: clos(x))(x)  # mp/u/t.py:8 in <lambda>
+- LAMBDA_GUARD: 2 <= L['x'].size()[0]  # g = torch.compile(lambda x: x * 2)  # mp/u/t.py:10 in <lambda> (user code shown is first use of this value--the guard itself is not due user code but due to 0/1 specialization in the framework; to avoid specialization try torch._dynamo.decorators.mark_unbacked(tensor, dim))

Guard latency = 288.91 us
'''


def test_the_cpp_guard_tree_leaves_under_their_managers_sources():
    """Each leaf "KIND: check" takes the source of the nearest enclosing GuardManager (a leaf directly under
    the root: no source); manager lines and other lines are no guards. torch's verbose code part
    (guards.py ``get_verbose_code_part``) is "check  # user line  # file:LINE in fn" for a guard with a
    user stack, "check  # file:LINE in fn" (torch's own frame) for one with only Dynamo's stack: the
    user stack is what follows the user line."""
    got = [(g.kind, g.source, g.code, g.user_stack) for g in cpp_tree(TREE)]
    assert got == [
        ("LAMBDA_GUARD", "", ["torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None"], []),
        ("TORCH_FUNCTION_MODE_STACK", "", ["___check_torch_function_mode_stack()"], []),
        ("DEFAULT_DEVICE", "", ["utils_device.CURRENT_DEVICE == None"], []),
        ("TENSOR_MATCH", "L['x']", ["check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, "
                                    "AutogradCPU), torch.float32, device=None, requires_grad=False, size=[3], stride=[1])"],
         ["mp/u/t.py:5 in clos"]),
        ("DIMENSION_DYNAMIC_MARKING_GUARD", "L['x']", ["hasattr(L['x'], '_dynamo_dynamic_indices') == False"],
         ["mp/u/t.py:5 in clos"]),
        ("NO_TENSOR_ALIASING", "L['x']", ["check_no_aliasing(L['x'], G['y0'])"], []),
        ("NO_TENSOR_ALIASING", "G['y0']", [], []),  # written whole once, then bare
        ("ID_MATCH", "G['d']", ["___check_obj_id(G['d'], 9)"], ["mp/u/t.py:6 in clos"]),
        ("ID_MATCH", "G", ["___check_obj_id(G['clos'].__code__, 139651522331296), type=<class 'code'>"],
         ["mp/u/t.py:8 in <lambda>"]),
        ("LAMBDA_GUARD", "", ["2 <= L['x'].size()[0]"],
         ["mp/u/t.py:10 in <lambda> (user code shown is first use of this value--the guard itself is not due user "
          "code but due to 0/1 specialization in the framework; to avoid specialization try "
          "torch._dynamo.decorators.mark_unbacked(tensor, dim))"]),
    ]


# a dict iterated over: its keys and values get managers of their own, with no accessor
DICT_TREE = '''
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- DictGuardManager: source=L['d'], accessed_by=FrameLocalsGuardAccessor(key='d', framelocals_idx=0), type=<class 'dict'>, tag_safe=(False, False)
| | +- KeyValueManager pair at index=0
| | | +- KeyManager: GuardManager: source=list(dict.keys(L['d']))[0], type=<class 'str'>, tag_safe=(False, False)
| | | | +- EQUALS_MATCH: list(dict.keys(L['d']))[0] == 'a'                             # for k, v in d.items():  # mp/u/t.py:6 in g
| | | +- ValueManager: GuardManager: source=L['d']['a'], type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | | | +- TENSOR_MATCH: check_tensor(L['d']['a'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, size=[3], stride=[1])  # x = x + v  # mp/u/t.py:7 in g
| | +- TYPE_MATCH: ___check_type_id(L['d'], 140317500477088), type=<class 'dict'>  # label = f"{lo} +- {hi}"  # mp/u/t.py:5 in g
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=1), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- NO_TENSOR_ALIASING
'''


def test_the_keys_and_values_of_a_dict_have_their_own_sources():
    got = [(g.kind, g.source, g.user_stack) for g in cpp_tree(DICT_TREE)]
    assert got == [("EQUALS_MATCH", "list(dict.keys(L['d']))[0]", ["mp/u/t.py:6 in g"]),
                   ("TENSOR_MATCH", "L['d']['a']", ["mp/u/t.py:7 in g"]),
                   ("TYPE_MATCH", "L['d']", ["mp/u/t.py:5 in g"]),  # "+- " in the user's line is no tree mark
                   ("NO_TENSOR_ALIASING", "L['x']", [])]
    assert cpp_tree(DICT_TREE)[2].code == ["___check_type_id(L['d'], 140317500477088), type=<class 'dict'>"]


def test_a_guard_manager_without_a_source_and_a_leaf_outside_any_manager():
    text = "+- TYPE_MATCH: ___check_type_id(G['w'], 9)\n+- GuardManager: accessed_by=X\n| +- ID_MATCH: ___check_obj_id(x, 1)"
    assert [(g.kind, g.source) for g in cpp_tree(text)] == [("TYPE_MATCH", ""), ("ID_MATCH", "")]
    assert cpp_tree("") == [] and cpp_tree("Guard latency = 1 us\nlowercase: x\n+- lower_case: x\n+- Mixed_Case: y") == []


def test_guards_of_a_frame_are_read_from_the_tree_on_first_access():
    f = _frame()
    fill_guards(f, AttemptLog(cpp_guards=TREE), ST)
    assert pending(f, "guards") and peek(f, "guards") == []  # the tree is read when guards are
    assert [(g.kind, g.source) for g in f.guards] == [(g.kind, g.source) for g in cpp_tree(TREE)] and len(f.guards) == 10
    none = _frame()
    fill_guards(none, AttemptLog(), ST)
    assert not pending(none, "guards") and none.guards == []


def test_guards_json_as_torch_logs_it():
    """dynamo_guards (guards.py ``add_code_part``): one {"code", "stack", "user_stack"} per code part."""
    js = [{"code": "L['a'] is L['b']", "stack": None, "user_stack": None},
          {"code": "___check_obj_id(G['d'], 9)", "stack": None,
           "user_stack": [{"line": 6, "name": "clos", "filename": 1}]},
          {"code": 5}, "not a guard"]  # a damaged entry: no code
    f = _frame()
    fill_guards(f, AttemptLog(guards_json=js), ST)
    assert [(g.kind, g.source, g.code, g.user_stack) for g in f.guards] == [
        ("", "", ["L['a'] is L['b']"], []), ("", "", ["___check_obj_id(G['d'], 9)"], ["t.py:6 in clos"]), ("", "", [], [])]
    # the C++ tree holds every guard (also these code parts): when it is logged, it is what is read
    both = _frame()
    fill_guards(both, AttemptLog(guards_json=js, cpp_guards=TREE), ST)
    assert [g.kind for g in both.guards] == [g.kind for g in cpp_tree(TREE)]
