"""Re-export: the attempt logic lives in :mod:`tracer.model.attempts`, torch-free, so that
``tracer.load_trace`` derives statuses and times from a log with the very same code.

Invariant: nothing is defined here; import from :mod:`tracer.model.attempts` in new code.
"""

from tracer.model.attempts import AttemptInfo, format_id, local_ids, location, metric_times, settle_status

__all__ = ["AttemptInfo", "local_ids", "settle_status", "format_id", "metric_times", "location"]
