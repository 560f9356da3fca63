"""A process whose merged output is read on a thread, each line with the time it was read
(monotonic clock): the benches that act on a running launch (kill a node, time a log line) share it.
"""
import os
import re
import subprocess
import sys
import threading
import time


class Watched:
    def __init__(self, cmd):
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []  # (time, line)
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def wait_until(self, test, what, after=0.0, timeout=120.0):
        """The time of the first line read after `after` for which test(line) is truthy, and that
        value; ends the script, with the last lines, when the process ends or `timeout` passes first."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for t, line in self.lines:
                    if t >= after:
                        found = test(line)
                        if found:
                            return t, found
                if self.p.poll() is not None or time.monotonic() > deadline:
                    text = "\n".join(l for _, l in self.lines[-40:])
                    sys.exit(f"{os.path.basename(sys.argv[0])}: no line with {what}:\n{text}")
                self.cv.wait(0.1)

    def wait_for(self, *parts, after=0.0, timeout=120.0):
        """The first line that contains every part: (its time, the line)."""
        return self.wait_until(lambda line: line if all(p in line for p in parts) else None, repr(parts), after,
                               timeout)

    def wait_match(self, pattern, after=0.0, timeout=120.0):
        """The first line `pattern` (a regular expression) matches: (its time, the match)."""
        r = re.compile(pattern)
        return self.wait_until(r.search, repr(pattern), after, timeout)

    def output(self):
        with self.cv:
            return [line for _, line in self.lines]

    def finish(self, timeout=300):
        self.p.wait(timeout)
        self.reader.join()
        return [l for _, l in self.lines]
