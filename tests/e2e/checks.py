"""Pass/fail tally shared by the end-to-end check scripts: one line per check, a summary, an exit code."""


class Checks:
    """Callable as check(ok, what): prints 'ok   what' or 'FAIL what' and counts it."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def __call__(self, ok, what):
        ok = bool(ok)
        self.passed += ok
        self.failed += not ok
        print(("ok   " if ok else "FAIL ") + what)
        return ok

    def summary(self):
        """Prints 'N passed, M failed'; returns the process exit code (1 if any check failed)."""
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
