"""dynascope's rendering side: explorer widget, DOT/SVG, static HTML. Reads tracer.model only.

PLACEHOLDER: owned by the viz work (issue 4).
"""


def mimebundle(cap, include=None, exclude=None):
    return {"text/plain": str(cap)}
