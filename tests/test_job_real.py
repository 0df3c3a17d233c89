"""A real 8-rank ``torchrun`` job (gloo, CPU) of a small transformer under torch.compile, wrapped in DDP
and in FSDP2 (conftest.py ``transformer_job``): rank 5 breaks the graph, rank 2's TORCH_TRACE log is cut
in half afterwards. load_job names rank 5's divergent frames, the cut log is a problem naming rank 2
and its file, and the cut frame is no finding; ``dynascope report`` warns of the cut; the job page
opens in Chromium and a finding's view draws its graphs. Checked against torch's own records: the
compile ids and graph breaks each rank's log holds, and the whole log kept beside the cut one."""

from __future__ import annotations

import json
import re

import pytest
from torchrun_job import CUT_RANK, ODD_RANK, RANKS

import tracer
import viz
from tracer.job import rank_diff
from tracer.trace_log import load_trace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

_RECORD = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ \S+\] (\{.*)$")


def _torch_ids(path) -> list[str]:
    """The compile ids torch's records in one log carry, in the order they first appear ("4/0", "4/0_1"),
    read straight from the metadata JSON of each record (a line that is not whole JSON is skipped)."""
    seen: dict[str, None] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = _RECORD.match(line)
        if m is None:
            continue
        try:
            meta = json.loads(m.group(1))
        except ValueError:
            continue
        if isinstance(meta.get("frame_id"), int) and isinstance(meta.get("frame_compile_id"), int):
            attempt = meta.get("attempt") or 0
            seen.setdefault(f"{meta['frame_id']}/{meta['frame_compile_id']}" + (f"_{attempt}" if attempt else ""), None)
    return list(seen)


def _breaks(frame) -> bool:
    """Whether a frame's guards check torch._dynamo.graph_break (the frame called it)."""
    return any("graph_break" in g.source for g in frame.guards)


def _logs(trace) -> dict[int, object]:
    return {r: next(trace.glob(f"*rank_{r}_*.log")) for r in range(RANKS)}


def test_the_job_ran_on_eight_ranks_and_one_log_is_cut(transformer_job):
    logs = _logs(transformer_job.trace)
    whole = transformer_job.uncut.read_bytes()
    cut = transformer_job.cut.read_bytes()
    assert len(cut) == len(whole) // 2 or (len(whole) // 2 < len(cut) < len(whole) // 2 + 200)
    assert whole.startswith(cut) and cut[-1:] != b"\n" and whole[len(cut):len(cut) + 1] != b"\n"  # mid-line
    ids = {r: _torch_ids(p) for r, p in logs.items()}
    # torch's own records: every rank but the odd one logged the same compiles; the odd rank more
    assert all(ids[r] == ids[0] for r in range(RANKS) if r not in (ODD_RANK, CUT_RANK))
    assert len(ids[ODD_RANK]) > len(ids[0])
    assert ids[CUT_RANK] == ids[0][:len(ids[CUT_RANK])]  # the cut log holds the first compiles of the others
    texts = {r: p.read_text(encoding="utf-8", errors="replace") for r, p in logs.items()}
    # the explanation Dynamo logs for a call to graph_break() (torch/_dynamo/variables/functions.py); not the
    # call's text, which torch 2.15's hints for other breaks quote on every rank
    assert [r for r in range(RANKS) if "User-inserted graph break" in texts[r]] == [ODD_RANK]


def test_load_job_names_the_divergent_rank_and_the_cut_log(transformer_job):
    job = tracer.load_job(str(transformer_job.trace))
    assert sorted(job.ranks) == list(range(RANKS)) and job.meta["loaded_from"] == "TORCH_TRACE"
    # the cut: one problem, naming the rank, its file and the byte the file ends at
    (problem,) = job.problems
    size = transformer_job.cut.stat().st_size
    assert problem.startswith(f"rank {CUT_RANK}: {transformer_job.cut.name}: cut off: the file ends (byte {size})")
    cut_in = job.ranks[CUT_RANK].cut_in
    assert cut_in == job.rank(CUT_RANK).meta["cut_in"]  # the summary says what the rank's capture says
    assert cut_in and f"its log ends inside frame(s) {', '.join(sorted(cut_in))}" in problem
    # every finding is rank 0 against the odd rank: none names the cut rank, whose cut frames are no finding
    assert job.divergence and all(d.ranks == [0, ODD_RANK] for d in job.divergence)
    explained = [line for line in job.checked if line.startswith("not counted: ")]
    assert explained and all(f"rank {CUT_RANK}'s log" in line for line in explained)
    # the odd rank's frames, named: the ids only it compiled, as torch's records say
    ids0, ids5 = (_torch_ids(_logs(transformer_job.trace)[r]) for r in (0, ODD_RANK))
    (frames,) = [d for d in job.divergence if d.kind == "frames" and d.message.startswith("rank 0 made")]
    only5 = [job.ranks[ODD_RANK].frames[ids5.index(c)].compile_id for c in ids5 if c not in ids0]
    assert frames.message.endswith(f"only on rank {ODD_RANK}: {', '.join(only5)}") and frames.compile_ids[ODD_RANK] == only5[0]
    # the call to torch._dynamo.graph_break() only the odd rank made, named
    named = [d for d in job.divergence if "graph_break" in d.message]
    if transformer_job.wrap == "ddp":  # the whole forward is one frame: it restarted at the break on the odd rank only
        (d,) = named
        (cid,) = set(d.compile_ids.values())
        assert d.kind == "status" and "compiled on rank 0, restarted" in d.message
        assert job.ranks[ODD_RANK].frame(cid).status == "restarted" and job.ranks[0].frame(cid).status == "compiled"
    else:  # FSDP2's hooks run outside Dynamo (each block's call breaks the graph): the odd rank calls
        # graph_break() in the resume function after block 0, whose guards then check that call ...
        (d,) = named
        (cid,) = set(d.compile_ids.values())
        assert d.kind == "guards" and [_breaks(job.rank(r).frame(cid)) for r in (0, ODD_RANK)] == [False, True]
        # ... and the next compile id is the function after the break on the odd rank, after block 1 on rank 0
        (code,) = [d for d in job.divergence if d.kind == "frames" and "different code" in d.message]
        a, b = (job.ranks[r].frame(code.compile_ids[r]) for r in (0, ODD_RANK))
        assert a.compile_id == b.compile_id and a.code != b.code and "torch_dynamo_resume_in_forward" in b.code
    assert tracer.Job.from_json(job.to_json()) == job
    read_only = tracer.load_job(str(transformer_job.trace), read_only=True)  # the same findings, read-only ranks
    assert {s.loader for s in read_only.ranks.values()} == {"trace-read-only"}
    assert read_only.to_json().replace('"trace-read-only"', '"trace"') == job.to_json()
    # ranks compared in worker processes (each worker its rank against rank 0): the same Job
    assert tracer.load_job(str(transformer_job.trace), workers=2).to_json() == job.to_json()


def _clear_read_caches() -> None:
    """Forget every kept parse and guard tree: the next load reads as a process that loaded nothing before."""
    from tracer.trace_log import deferred, guards

    for cache in (deferred._shared, guards._trees, guards._shared_trees, guards._leaves, guards._lines):
        cache.clear()


def _read_all(cap):
    """``cap`` with every graph, guard list and problem read (what the read-only load shares is made then)."""
    for f in cap.frames:
        for g in [*f.graphs().values(), *((f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference)
                                          if f.aot is not None else ())]:
            if g is not None:
                g.nodes  # noqa: B018 (the first read parses)
        f.guards  # noqa: B018
    cap.all_problems()
    return cap


def _records(cap):
    """Every node's and guard's fields of ``cap``, fully read."""
    for f in _read_all(cap).frames:
        for g in [*f.graphs().values(), *((f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference)
                                          if f.aot is not None else ())]:
            for n in g.nodes if g is not None else ():
                yield [n.args, n.kwargs, n.inputs, n.users, n.calls, n.meta]
        for guard in f.guards:
            yield [guard.code, guard.user_stack]


def _containers(v):
    """Every list, dict and tuple in ``v`` (``v`` itself not counted)."""
    for x in (v.values() if isinstance(v, dict) else v):
        if isinstance(x, (list, dict, tuple)):
            yield x
            yield from _containers(x)


def test_read_only_job_logs_load_as_editable_and_as_each_rank_alone(transformer_job):
    """All ranks' logs loaded read-only in one process (the ranks then share parses, node lists and every
    equal guard leaf: their guard trees differ only where a guard names a per-process object id) give,
    rank by rank, the JSON of the editable load and of that rank's log loaded read-only with nothing kept
    before it; only equal guards are one object, a guard naming an object id stays each rank's own."""
    logs = sorted(transformer_job.trace.glob("*.log"))
    _clear_read_caches()
    together = [_read_all(load_trace(str(p), read_only=True)) for p in logs]
    editable = [_read_all(load_trace(str(p))).to_json() for p in logs]
    alone = []
    for p in logs:
        _clear_read_caches()
        alone.append(_read_all(load_trace(str(p), read_only=True)).to_json())
    assert [c.to_json() for c in together] == editable == alone
    # every list and dict in a read-only node or guard refuses writes, and none is in the editable load,
    # which copied the kept parses (hints that said a nested value is flat would share its inner lists)
    ro = [v for c in together for x in _records(c) for v in _containers(x)]
    assert ro and not [v for v in ro if type(v) in (list, dict)]
    mine = [load_trace(str(p)) for p in logs]
    assert not {id(v) for v in ro if type(v) is not tuple} & {id(v) for c in mine for x in _records(c) for v in _containers(x)}
    a = max(together[0].frames, key=lambda f: len(f.guards))  # the model's frame on two ranks
    pairs = list(zip(a.guards, together[1].frame(a.compile_id).guards, strict=True))
    assert any(x is y for x, y in pairs)  # equal leaves shared between ranks ...
    assert all((x is y) == (x == y) for x, y in pairs)  # ... and only those: a guard naming an id is each rank's own


def test_the_cut_rank_agrees_with_its_whole_log_up_to_the_cut(transformer_job):
    """Each frame the cut log holds whole is the frame the whole log gives; the frames it ends inside
    say so; the cut rank's whole frames are rank 0's (no finding is hidden by the cut)."""
    cut = load_trace(str(transformer_job.cut))
    whole = load_trace(str(transformer_job.uncut))
    cut_in = set(cut.meta["cut_in"])
    assert "cut_in" not in whole.meta and whole.problems == [] and cut.problems == [cut.meta["not_read"]]
    ids = [f.compile_id for f in cut.frames]
    assert ids == [f.compile_id for f in whole.frames][:len(ids)]
    for f in cut.frames:
        if f.compile_id in cut_in:
            assert any("the log ends inside this compile" in p for p in f.problems)
        else:
            assert f.status == whole.frame(f.compile_id).status and not rank_diff(f, whole.frame(f.compile_id))
            assert not any("the log ends inside" in p for p in f.problems)
    # cut at the middle of the bytes: the frame the log ends inside is one the whole log holds
    assert cut_in and cut_in <= {f.compile_id for f in whole.frames}


def test_dynascope_report_warns_of_the_cut_log(transformer_job, tmp_path, capsys):
    from viz.cli import main

    out = tmp_path / "job.html"
    assert main(["report", str(transformer_job.trace), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning:" in line]
    assert len(warnings) == 1 and transformer_job.cut.name in warnings[0] and "cut off" in warnings[0]
    assert out.stat().st_size > 0


@pytest.mark.browser
def test_job_page_of_eight_ranks_in_chromium(transformer_job, browser, tmp_path):
    """The static job page opens with the cut log named at the top, rank 5's divergent cells marked,
    and a finding's view, decoded when opened, shows its ranks' frames as lines that decode the frame
    when opened (Note [A rank's frame in a finding's view on demand]); rank 0's draws the graph torch
    recorded for it."""
    job = tracer.load_job(str(transformer_job.trace))
    # the first finding on one frame that rank 0 compiled (DDP: the forward, a status finding whose frames
    # are its view; FSDP2: the resume function after block 1, a guards finding whose diff is its view)
    index, d = next((i, d) for i, d in enumerate(job.divergence) if d.compile_ids[0] and "rank 0 made" not in d.message
                    and job.ranks[0].frame(d.compile_ids[0]).status == "compiled")
    cap0 = job.rank(0)
    frame = cap0.frame(d.compile_ids[0])
    at = cap0.frames.index(frame)
    odd = d.compile_ids[ODD_RANK]
    path = viz.export_job_html(job, tmp_path / "job.html")
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        assert page.locator(".ds-job table.ds-grid tbody tr").count() == RANKS
        problems = page.locator(".ds-job").first.inner_text()
        assert f"rank {CUT_RANK}: {transformer_job.cut.name}: cut off" in problems
        cell = page.locator(f'td.ds-divergent[data-rank="{ODD_RANK}"][data-frame="{odd}"]')
        assert cell.count() == 1 and d.message in cell.get_attribute("title")
        side = page.locator(f'details[id="ds-side-{index}"]')
        assert not side.evaluate("e => e.open") and side.locator(".ds-lazy-body").inner_html() == ""
        page.locator(f'a[href="#ds-side-{index}"]').click()
        page.wait_for_function("e => e.open && e.dataset.dsLoaded === '1'", arg=side.element_handle(), timeout=30_000)
        assert side.locator("h4", has_text=f"rank {ODD_RANK}, frame {odd}").count() == 1
        # rank 0's frame in the view: a line naming the frame's payload in rank 0's report
        line = side.locator(".ds-job-side > .ds-side > div").nth(0).locator(f'details.ds-side-frame[data-frame="{frame.compile_id}"]')
        assert line.get_attribute("data-payload") == f"r0-{at}"
        assert d.diff is None and line.evaluate("e => e.open")  # the frames are the view: each rank's first opened with it
        page.wait_for_function("e => e.dataset.dsLoaded === '1'", arg=line.element_handle(), timeout=30_000)
        host = line.locator('.ds-graphbox[data-kind="root"]')
        host.scroll_into_view_if_needed()
        drawn = host.locator(".ds-canvas svg [data-node]")
        drawn.first.wait_for(timeout=60_000)
        # the graph torch logged for rank 0's frame: its nodes, the modules' ones shut in module boxes
        names = {n.name for n in frame.graph.nodes}
        shown = drawn.evaluate_all("es => es.map(e => e.getAttribute('data-node'))")
        assert shown and set(shown) <= names and "output" in shown
        boxes = host.locator(".ds-canvas svg [data-group]").evaluate_all("es => es.map(e => e.getAttribute('data-group'))")
        for box in boxes:  # "L['self'].blocks.1" holds the nodes Dynamo named l_self_modules_blocks_modules_1_...
            path = box.removeprefix("L['self'].").replace(".", "_modules_")
            assert box == "(inputs)" or any(f"_modules_{path}_" in n for n in names), (box, sorted(names))
        assert len(shown) + len(boxes) < len(names) if boxes else sorted(shown) == sorted(names)
        # a finding with a diff (FSDP2: the guards of the resume function after the break): the diff is
        # its view, its frames stay folded and undecoded until one is opened
        diffs = [i for i, found in enumerate(job.divergence) if found.diff is not None]
        assert bool(diffs) == (transformer_job.wrap == "fsdp2")  # DDP's findings are a status and frames
        for i in diffs:
            found = job.divergence[i]
            view = page.locator(f'details[id="ds-side-{i}"]')
            page.locator(f'a[href="#ds-side-{i}"]').click()
            page.wait_for_function("e => e.open && e.dataset.dsLoaded === '1'", arg=view.element_handle(), timeout=30_000)
            assert view.locator(".ds-diff").count() == 1
            lines = view.locator(".ds-job-side > .ds-side details.ds-side-frame")
            assert lines.count() >= 2 and view.locator(".ds-side-frame[data-ds-loaded], .ds-side-frame[open]").count() == 0
            first = lines.nth(0)
            first.locator("summary").click()
            page.wait_for_function("e => e.dataset.dsLoaded === '1'", arg=first.element_handle(), timeout=30_000)
            assert first.get_attribute("data-frame") == found.compile_ids[found.ranks[0]]
            assert first.locator(".ds-lazy-body > .ds-report").count() == 1  # the frame's report, decoded
        assert not errors, errors
    finally:
        page.close()
