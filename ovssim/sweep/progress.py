"""Progress of a sweep: runs done / total, runs per second, time left (on stderr)."""
from __future__ import annotations

import math
import sys
import time


class Progress:
    """Runs done / total, runs per second and time left: a rich bar on a terminal, else log lines."""

    def __init__(self, total: int, already: int, enabled: bool, name: str):
        self.total, self.done, self.new = total, already, 0
        self.t0 = time.monotonic()
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self.last_log = self.t0
        self.bar = None
        if self.tty:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            self.bar = RichProgress(TextColumn(name), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                                    TextColumn("elapsed,"), TimeRemainingColumn(), TextColumn("left"),
                                    transient=True, console=Console(stderr=True))
            self.bar.start()
            self.task = self.bar.add_task("runs", total=total, completed=already, rate="")

    def grow(self, total: int) -> None:
        """A sequential sweep planned more runs: the new total."""
        if total != self.total:
            self.total = total
            if self.bar is not None:
                self.bar.update(self.task, total=total)

    @property
    def rate(self) -> float:
        dt = time.monotonic() - self.t0
        return self.new / dt if dt > 0 else 0.0

    def eta(self) -> float:
        r = self.rate
        return (self.total - self.done) / r if r > 0 else float("nan")

    def advance(self) -> None:
        self.done += 1
        self.new += 1
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, rate=f"{self.rate:.2f} runs/s")
        elif self.enabled and (time.monotonic() - self.last_log > 10 or self.done == self.total):
            self.last_log = time.monotonic()
            print(f"ovssim sweep: {self.done}/{self.total} runs, {self.rate:.2f} runs/s, "
                  f"{_fmt_s(self.eta())} left", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _fmt_s(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"
