"""Keep the memory that Flight messages pass through inside the process (glibc only).

A DoExchange or DoGet message is megabytes long, and a message goes through several buffers
of that size (gRPC's, the Python bytes, the re-framed IPC message). glibc serves each of these
with mmap and unmaps it when it is freed, and it gives freed memory at the top of a heap back
to the kernel. So each message is written into pages the kernel must fault in one by one.
On the 2-core VM where pyairport is benchmarked a fault costs ~2 µs per 4 KiB, which was
more than the rest of the transport's work: a 10M-row INSERT made ~300,000 faults in the
server, even into a table that keeps nothing.

The settings below let freed message buffers serve the next message: buffers up to 32 MiB
(glibc's largest mmap threshold) come from the heap, a heap keeps up to 256 MiB of free
memory before it trims, and two arenas let a buffer freed by one gRPC thread be reused by
another. They are process-wide; ServerConfig(keep_message_memory=False) leaves them alone.
"""

from __future__ import annotations

import ctypes
import logging
import platform

log = logging.getLogger("pyairport.allocator")

# mallopt parameters, from glibc's malloc.h.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8

MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 256 * 1024 * 1024
ARENA_MAX = 2


def keep_message_memory() -> bool:
    """Apply the settings to this process. False (and nothing changed) where the C library
    is not glibc."""
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = {
        _M_MMAP_THRESHOLD: MMAP_THRESHOLD,
        _M_TRIM_THRESHOLD: TRIM_THRESHOLD,
        _M_ARENA_MAX: ARENA_MAX,
    }
    applied = all(mallopt(parameter, value) == 1 for parameter, value in settings.items())
    if not applied:
        log.warning("glibc refused a malloc setting; Flight messages may fault in fresh memory")
    return applied
