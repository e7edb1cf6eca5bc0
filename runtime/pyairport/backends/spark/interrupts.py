"""A statement's Spark work stopped once its call is over: the client cancelled, went away or
let its deadline pass. Without it Spark ran on and committed after the client had gone (a
DuckDB user's Ctrl-C on a large UPDATE changed the table anyway seconds later). Spark's job
tags mark the work started on this thread, and the call's context cancels them: a classic
session's SparkContext tags (its session-level tags, which Spark 4.2 documents for classic
too, cancelled nothing here), a Spark Connect session's own. The commit is Delta's last
step, so an interrupted statement commits nothing; one interrupted after its commit is
committed."""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from airport_contracts import Context
from airport_support.context import after_func

from .session import is_connect
from .sql import one_line

log = logging.getLogger("pyairport.spark")
RECANCEL_SECONDS = 0.05  # how often a done statement's later jobs are cancelled


@contextlib.contextmanager
def interrupted_when_done(spark: Any, ctx: Context) -> Iterator[None]:
    """Run the block's Spark work under a tag of its own, cancelled once ctx is done and
    again until the block ends. Where Spark cannot take the tag (its JVM gone), the block
    runs untagged and fails as it would: the tags never stand in for the statement's own
    error."""
    tag = f"pyairport-{uuid.uuid4().hex}"
    tags = _Tags(spark)
    if not tags.call("add", tag):
        yield
        return
    over = threading.Event()

    def cancel_until_over() -> None:
        # Spark cancels the jobs running under the tag, not those the statement starts after
        # (a MERGE's next phase, begun between two jobs): cancelled again until the block ends.
        tags.call("cancel", tag)
        while not over.wait(RECANCEL_SECONDS):
            tags.call("cancel", tag, quiet=True)

    stop = after_func(ctx, lambda: threading.Thread(target=cancel_until_over, daemon=True).start())
    try:
        yield
    finally:
        over.set()
        stop()
        tags.call("remove", tag)


class _Tags:
    """The job tags of the calling thread, in the session's kind of Spark: a Spark Connect
    session's own, a classic session's SparkContext's."""

    def __init__(self, spark: Any) -> None:
        connect = is_connect(spark)
        self.owner = spark if connect else spark.sparkContext
        self.names = _CONNECT if connect else _CLASSIC

    def call(self, what: str, tag: str, *, quiet: bool = False) -> bool:
        """Add, remove or cancel tag; False (logged) where Spark could not. quiet: a cancel
        again, not logged."""
        try:
            getattr(self.owner, self.names[what])(tag)
        except Exception as exc:  # the JVM gone: the statement fails on its own
            if not quiet:
                log.warning("could not %s a statement's Spark job tag: %s", what, one_line(exc))
            return False
        if what == "cancel" and not quiet:
            log.info("stopped the Spark work of a statement whose call ended")
        return True


# Spark 4.2's session tags (addTag, interruptTag) cancelled nothing in a classic session here.
_CONNECT = {"add": "addTag", "remove": "removeTag", "cancel": "interruptTag"}
_CLASSIC = {"add": "addJobTag", "remove": "removeJobTag", "cancel": "cancelJobsWithTag"}
