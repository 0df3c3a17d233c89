"""viz.browser_code: the widget's and the report's scripts are the ES module files joined, nothing else;
the constants the browser code shares with Python come from Python."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from viz import browser_code
from viz.browser_code import BUNDLES, CONSTANTS, Bundle, bundle, join, module_parts
from viz.canvas import GraphCanvas
from viz.drawing import PACKED_BOX_KEYS, PACKED_INTERNED
from viz.inspector import Inspector
from viz.job_view import JobGrid
from viz.report_graphs import report_script
from viz.style import FONT_PX, READABLE_PX
from viz.svg import SHAPES

VIZ = Path(browser_code.__file__).parent
STATEMENT = re.compile(r"^\s*(import|export)\b", re.M)


def _expected_body(name: str) -> str:
    """A file's text as it must appear in a bundle: import lines gone, ``export `` dropped, the
    default export bound to ``$default`` — written here independently of the bundler."""
    out = []
    text = browser_code._constants_source() if name == CONSTANTS else (VIZ / name).read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("import {"):
            continue
        if line.startswith("export default "):
            line = "const $default = " + line[len("export default "):]
        elif line.startswith("export "):
            line = line[len("export "):]
        out.append(line)
    return "\n".join(out)


def test_the_widgets_and_the_report_run_the_bundles():
    assert GraphCanvas._esm == bundle("canvas")
    assert Inspector._esm == bundle("inspector")
    assert JobGrid._esm == bundle("job_grid")
    assert report_script() == bundle("report")


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_a_bundle_is_its_files_in_order_and_nothing_else(name):
    spec = BUNDLES[name]
    code = bundle(name)
    # constants.js first when a file reads it (the inspector's bundle reads none)
    files = ((CONSTANTS,) if "// viz/constants.js" in code else ()) + spec.files
    at = 0
    for f in files:  # every file's own text, in the listed order
        body = _expected_body(f)
        assert STATEMENT.search(body) is None, f  # (what the files say is left once the statements go)
        found = code.find(body, at)
        assert found >= 0, f"viz/{f} is not in bundle {name!r} as written"
        at = found + len(body)
    rest = code
    for f in files:
        rest = rest.replace(_expected_body(f), "", 1)
    # what is not a file's text: the wrapper of each module and its imports, as destructurings
    wrapper = [line for line in rest.splitlines() if line.strip()]
    allowed = re.compile(r"// viz/[a-z_]+\.js|const \$[a-z_]+ = \(\(\) => \{|const \{ [\w$, ]+ \} = \$[a-z_]+;"
                         r"|return \{ [\w$:, ]* \};|\}\)\(\);|\(\(\) => \{|export default \$[a-z_]+\.default;"
                         r"|export const \{ [\w$, ]+ \} = \$[a-z_]+;")
    assert [w for w in wrapper if not allowed.fullmatch(w)] == []
    statements = STATEMENT.findall(code)
    if spec.kind == "script":
        assert statements == [] and code.startswith("(() => {") and code.endswith("})();")
    else:
        assert code.rstrip().splitlines()[-1] == f"export default ${spec.files[-1][:-3]}.default;"
        assert "import" not in statements


def test_constants_js_is_generated_from_python():
    text = module_parts(CONSTANTS)
    values = {}
    for line in text.body:
        if line.startswith("const "):
            k, v = line[len("const "):].rstrip(";").split(" = ", 1)
            values[k] = json.loads(v)
    assert values == {"BOX_KEYS": list(PACKED_BOX_KEYS), "INTERNED_KEYS": list(PACKED_INTERNED),
                      "FONT_PX": FONT_PX, "READABLE_PX": READABLE_PX, "SVG": SHAPES}
    assert [PACKED_BOX_KEYS[i] for i in PACKED_INTERNED] == ["sub", "role", "group", "part", "src"]
    used = {n for f in {f for b in BUNDLES.values() for f in b.files}
            for src, names in module_parts(f).imports if src == CONSTANTS for n in names}
    assert used == set(values)  # every constant is read by the browser code
    for f in ("report.js", "view.js", "svg_draw.js"):  # and no file keeps its own copy
        text = (VIZ / f).read_text(encoding="utf-8")
        assert '"id", "label", "sub"' not in text and "10 / 12" not in text and "M0,0 L10,5" not in text


@pytest.mark.parametrize("text, message", [
    ('  import { a } from "./x.js";\n', "import or export form"),
    ('export { a };\n', "import or export form"),
    ('const a = 1;\nimport { b } from "./x.js";\n', "before any other statement"),
    ('import * as m from "./x.js";\n', "import or export form"),
    ('export default 1;\nexport default 2;\n', "second export default"),
    ('export let a = 1;\n', "import or export form"),
])
def test_the_bundler_refuses_every_other_form(text, message):
    with pytest.raises(ValueError, match=message):
        module_parts("bad.js", text)


def test_a_bundle_must_list_what_its_files_import():
    with pytest.raises(ValueError, match="not earlier in bundle"):
        join(Bundle(("view.js",), "module"))
    with pytest.raises(ValueError, match="exports default"):
        join(Bundle(("svg_draw.js", "view.js", "canvas.js"), "script"))
    with pytest.raises(KeyError, match="must be one of"):
        bundle("nope")


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_the_files_are_real_es_modules(tmp_path):
    """Node resolves the files' imports as ES modules (constants.js written out as generated)."""
    for f in {f for b in BUNDLES.values() for f in b.files}:
        (tmp_path / f).write_text((VIZ / f).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / CONSTANTS).write_text(browser_code._constants_source(), encoding="utf-8")
    (tmp_path / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    script = ("const out = {};\n"
              "for (const f of ['canvas.js', 'job_grid.js', 'report.js', 'view.js', 'svg_draw.js', 'inspector.js',"
              " 'inspector_widget.js']) {\n"
              "  const m = await import('./' + f); out[f] = Object.keys(m).sort(); }\n"
              "console.log(JSON.stringify(out));\n")
    (tmp_path / "main.mjs").write_text(script, encoding="utf-8")
    got = subprocess.run(["node", "main.mjs"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(got.stdout) == {"canvas.js": ["default"], "job_grid.js": ["default"],
                                      "report.js": ["setUpReports"], "view.js": ["clickedCodeLine", "dsView"],
                                      "svg_draw.js": ["buildSvg", "fmt", "svgEl"],
                                      "inspector.js": ["drawInspector", "inspectorRows"], "inspector_widget.js": ["default"]}


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_the_inspector_rows_of_a_lifted_input(tmp_path):
    """viz/inspector.js inspectorRows (what the widget and the report draw, Note [One inspector]) on the
    facts of a placeholder lifted two bodies deep: the chain reads as steps up to the binding node; the
    user stack is a row of its own; meta comes last; a nested value is sorted JSON."""
    from explorer_capture import make_capture

    from viz.explorer import Explorer

    ex = Explorer(make_capture())
    ex.select("wrap_body_0.wrap_body_0")
    ex.select_node("y")
    info = dict(ex._inspector.info, meta={"stack_trace": "  File x.py, line 1\n    y = f()\n", "b": {"z": 1, "a": 2}})
    (tmp_path / "inspector.js").write_text((VIZ / "inspector.js").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    (tmp_path / "main.mjs").write_text(
        "import { inspectorRows } from './inspector.js';\n"
        f"console.log(JSON.stringify(inspectorRows({json.dumps(info)})));\n", encoding="utf-8")
    got = subprocess.run(["node", "main.mjs"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    rows = json.loads(got.stdout)
    by_key = {k: (kind, v) for k, kind, v in rows}
    assert by_key["lifted_chain"] == ("chain", ["y in wrap_body_0.wrap_body_0 (lifted_freevar)",
                                                 "y in wrap_body_0 (lifted_freevar)", "y in root (call_method)"])
    assert by_key["graph"] == ("text", "wrap_body_0.wrap_body_0") and by_key["name"] == ("text", "y")
    assert by_key["stack"] == ("pre", "  File x.py, line 1\n    y = f()")
    assert by_key["meta"] == ("pre", '{\n "b": {\n  "a": 2,\n  "z": 1\n }\n}')
    assert [k for k, _, _ in rows][:3] == ["name", "graph", "op"] and [k for k, _, _ in rows][-2:] == ["stack", "meta"]
