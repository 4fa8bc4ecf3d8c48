"""Pass/fail tally shared by the end-to-end check scripts: one line per check, a summary, an exit code."""


class Checks:
    """Callable as check(ok, what): prints 'ok   what' or 'FAIL what' and counts it."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def __call__(self, ok, what):
        ok = bool(ok)
        self.passed += ok
        self.failed += not ok
        print(("ok   " if ok else "FAIL ") + what)
        return ok

    def skip(self, what):
        """A check the script claims but could not run here (a missing oracle): prints 'SKIP what'.
        It fails the summary: the test must not report Passed for coverage it did not have."""
        self.skipped += 1
        print("SKIP " + what)

    def summary(self):
        """Prints 'N passed, M failed[, K skipped]'; returns the process exit code: 1 if any check
        failed or was skipped, or if no check ran at all (a script that checked nothing proves nothing)."""
        print(f"{self.passed} passed, {self.failed} failed" + (f", {self.skipped} skipped" if self.skipped else ""))
        if self.skipped:
            print(f"FAIL {self.skipped} check(s) skipped: the test's claimed coverage did not run")
        if self.passed + self.failed + self.skipped == 0:
            print("FAIL no check ran")
            return 1
        return 1 if self.failed or self.skipped else 0
