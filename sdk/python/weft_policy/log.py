"""``log``: one line into the host's log (``weft:policy/host.log``), or to
stderr when the policy runs natively."""

import sys
from typing import Callable

LEVELS = ("trace", "debug", "info", "warn", "error")

# The host keeps a log line short; a traceback longer than this is cut, and
# the cut says how much went.
MAX_MESSAGE_CHARS = 16_384

Sink = Callable[[str, str], None]


def _stderr_sink(level: str, message: str) -> None:
    print(f"[{level}] {message}", file=sys.stderr)


def bounded(message: object) -> str:
    """``message`` as text of at most MAX_MESSAGE_CHARS characters."""
    text = str(message)
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    cut = len(text) - MAX_MESSAGE_CHARS
    return f"{text[:MAX_MESSAGE_CHARS]}… ({cut} more characters)"


class Log:
    """Writes log lines to a sink: stderr until the component glue points it
    at the host."""

    def __init__(self) -> None:
        self._sink: Sink = _stderr_sink

    def use_sink(self, sink: Sink) -> None:
        """Sends every later line to ``sink(level, message)``."""
        self._sink = sink

    def write(self, level: str, message: object) -> None:
        if level not in LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
        self._sink(level, bounded(message))

    def trace(self, message: object) -> None:
        self.write("trace", message)

    def debug(self, message: object) -> None:
        self.write("debug", message)

    def info(self, message: object) -> None:
        self.write("info", message)

    def warn(self, message: object) -> None:
        self.write("warn", message)

    def error(self, message: object) -> None:
        self.write("error", message)


log = Log()
