"""The only place dynascope touches private torch modules.

Every private symbol used is listed in ``PRIVATE_SYMBOLS`` (see ``tracer/_torch/_symbols.py``) and
checked by ``tests/test_torch_compat.py``, so a torch upgrade fails loudly in one place.
Invariant: every hook here is installed for one capture and removed after it, also on error.
"""
