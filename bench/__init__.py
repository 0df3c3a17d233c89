"""dynascope's benchmarks: capture overhead, explorer scaling, memory, pause latency (``python -m bench``).

Invariant: every number reported is a ratio (or a size) measured inside one process, median of
repeated runs after a warm-up, each compile-measuring run from a fresh ``torch.compiler.reset()``;
nothing here is imported by the library or asserted on in tests.
"""
