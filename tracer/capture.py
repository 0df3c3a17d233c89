"""capture(): install the recording hooks, run torch.compile once, tear down, return a Capture.

PLACEHOLDER: owned by the capture-core work (issue 2).
"""

from tracer.model import Capture


def capture(fn, *args, fullgraph=False, dynamic=None, **kwargs) -> Capture:
    raise NotImplementedError("capture core not written yet")
