#!/usr/bin/env python3
"""Tests of thunder_gen.binary.find_thunder_gen() (python/thunder_gen/binary.py): where the Python
side finds the thunder-gen binary. Each case copies the package into a scratch checkout (or a
folder that is not one), puts stand-in binaries where the case needs them, and asks a fresh
interpreter with only that environment. Standard library only: the package must import without
torch, and this interpreter need not have it.

    python3 tests/find_thunder_gen.py      (ctest: python.find_thunder_gen)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "thunder_gen"

ASK = """
import json, sys
from thunder_gen.binary import ThunderGenNotFound, find_thunder_gen
try:
    print(json.dumps({"found": find_thunder_gen(), "torch": "torch" in sys.modules}))
except ThunderGenNotFound as e:
    print(json.dumps({"error": str(e), "override": e.override, "torch": "torch" in sys.modules}))
"""


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


class FindThunderGen(unittest.TestCase):
    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="find-thunder-gen-"))
        self.addCleanup(shutil.rmtree, self.scratch)
        self.checkout = self.scratch / "checkout"
        shutil.copytree(PACKAGE, self.checkout / "python" / "thunder_gen", ignore=shutil.ignore_patterns("__pycache__"))
        (self.checkout / "CMakeLists.txt").write_text("project(thunder_gen)\n")
        (self.checkout / "src").mkdir()
        self.bin = self.scratch / "bin"  # a folder on PATH
        self.bin.mkdir()

    def ask(self, python_dir: Path, override=None, path=None) -> dict:
        env = {"PATH": str(self.bin) if path is None else path, "PYTHONPATH": str(python_dir)}
        if override is not None:
            env["THUNDER_GEN"] = str(override)
        run = subprocess.run([sys.executable, "-c", ASK], env=env, capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        answer = json.loads(run.stdout)
        self.assertFalse(answer["torch"], "importing thunder_gen.binary imported torch")
        return answer

    def test_override_wins_over_the_build_and_path(self):
        executable(self.checkout / "build" / "thunder-gen")
        executable(self.bin / "thunder-gen")
        mine = executable(self.scratch / "elsewhere" / "my-thunder-gen")
        self.assertEqual(self.ask(self.checkout / "python", override=mine), {"found": str(mine), "torch": False})

    def test_override_that_names_no_executable_fails_naming_it(self):
        executable(self.checkout / "build" / "thunder-gen")  # not used instead
        plain = self.scratch / "plain-file"
        plain.write_text("")
        for override, why in ((self.scratch / "missing", "does not exist"), (plain, "is not executable"), (self.scratch, "is a folder")):
            with self.subTest(override=override):
                answer = self.ask(self.checkout / "python", override=override)
                self.assertTrue(answer["override"])
                self.assertIn(f"$THUNDER_GEN={override}", answer["error"])
                self.assertIn(why, answer["error"])

    def test_the_checkouts_build_folder_before_path(self):
        built = executable(self.checkout / "build" / "thunder-gen")
        executable(self.bin / "thunder-gen")
        self.assertEqual(self.ask(self.checkout / "python")["found"], str(built))

    def test_path_when_nothing_is_built(self):
        on_path = executable(self.bin / "thunder-gen")
        (self.checkout / "build").mkdir()
        (self.checkout / "build" / "thunder-gen").write_text("")  # there, but not executable: passed over
        self.assertEqual(self.ask(self.checkout / "python")["found"], str(on_path))

    def test_outside_a_checkout_only_path(self):
        installed = self.scratch / "site-packages"
        shutil.copytree(self.checkout / "python" / "thunder_gen", installed / "thunder_gen")
        executable(self.scratch / "build" / "thunder-gen")  # beside site-packages, as a checkout's would be: not a checkout
        answer = self.ask(installed)
        self.assertIn("not in a checkout's python/", answer["error"])
        on_path = executable(self.bin / "thunder-gen")
        self.assertEqual(self.ask(installed)["found"], str(on_path))

    def test_none_found_names_every_place_and_the_ways_out(self):
        answer = self.ask(self.checkout / "python", path=f"{self.bin}:{self.scratch / 'nothing-here'}")
        self.assertFalse(answer["override"])
        error = answer["error"]
        for place in ("$THUNDER_GEN (not set)", f"{self.checkout / 'build' / 'thunder-gen'} (the checkout's build folder)",
                      f"PATH ({self.bin}:{self.scratch / 'nothing-here'})"):
            self.assertIn(place, error)
        for way_out in (f"{self.checkout}/tools/build.sh thunder-gen", "cmake --install", "set $THUNDER_GEN"):
            self.assertIn(way_out, error)

    def test_tools_find_this_checkouts_package_and_build(self):
        """tools/thunder_gen_binary.py imports this checkout's package, whatever PYTHONPATH says."""
        probe = ("import sys; sys.path.insert(0, sys.argv[1]); import thunder_gen_binary, thunder_gen.binary as b; "
                 "print(b.__file__); print(b.checkout())")
        run = subprocess.run([sys.executable, "-c", probe, str(ROOT / "tools")], capture_output=True, text=True,
                             env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(self.checkout / "python")})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.split(), [str(PACKAGE / "binary.py"), str(ROOT)])


if __name__ == "__main__":
    unittest.main(verbosity=2)
