#!/usr/bin/env python3
"""Usage: run_tests.py [--exclude CLASS]... NAME...

Runs unittest tests (NAME: a module, module.Class or module.Class.test_method, as for
`python -m unittest -v NAME...`), leaving out the test classes named by --exclude, and exits the
way CTest reads it (tests/python/CMakeLists.txt sets SKIP_RETURN_CODE 77):
  0   the tests passed (some may have skipped beside them: they are listed at the end),
  1   a test failed or raised, or nothing was found to run,
  77  every test skipped (torch not importable, a file of ../shared missing, ...): CTest reports
      the test as skipped, not passed; the reasons are the last lines ("SKIPPED: ...").
"""
import sys
import unittest

SKIP_RETURN_CODE = 77


def tests_of(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from tests_of(test)
        else:
            yield test


def main(argv):
    exclude = set()
    names = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--exclude" and args:
            exclude.add(args.pop(0))
        elif arg.startswith("-"):
            print(__doc__.strip(), file=sys.stderr)
            return 2
        else:
            names.append(arg)
    if not names:
        print(__doc__.strip(), file=sys.stderr)
        return 2

    loaded = unittest.defaultTestLoader.loadTestsFromNames(names)
    suite = unittest.TestSuite(t for t in tests_of(loaded) if type(t).__name__ not in exclude)
    if suite.countTestCases() == 0:
        print(f"run_tests.py: no tests found in {' '.join(names)}"
              + (f" without {', '.join(sorted(exclude))}" if exclude else ""))
        return 1
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    sys.stdout.flush()

    # A class whose setUpClass skips adds one skip for the class and runs none of its tests;
    # a skipped test method counts in testsRun and adds one skip.
    skipped_methods = sum(1 for test, _ in result.skipped if isinstance(test, unittest.TestCase))
    ran = result.testsRun - skipped_methods
    reasons = sorted({reason for _, reason in result.skipped})
    if not result.wasSuccessful():
        return 1
    if ran == 0 and result.skipped:
        for reason in reasons:
            print(f"SKIPPED: {reason}")
        print(f"SKIPPED: nothing in {' '.join(names)} ran ({len(result.skipped)} skipped)")
        return SKIP_RETURN_CODE
    if ran == 0:
        print(f"run_tests.py: nothing ran in {' '.join(names)}")
        return 1
    if result.skipped:
        print(f"run_tests.py: {ran} test(s) ran; {len(result.skipped)} skipped beside them:")
        for test, reason in result.skipped:
            print(f"  {test}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
