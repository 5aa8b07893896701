#!/usr/bin/python3
"""scripts/check_layers.py on small synthetic trees: it must pass a tree that
keeps the layers and fail one that breaks them, naming the file and line."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "check_layers.py")


class CheckLayers(unittest.TestCase):
    def tree(self, files):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        for path, text in files.items():
            full = os.path.join(d.name, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        return d.name

    def run_check(self, src, *extra):
        r = subprocess.run([sys.executable, SCRIPT, "--src", src, *extra],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    def test_include_down_a_layer_passes(self):
        src = self.tree({"common/status.h": "#pragma once\n",
                         "store/database.h": '#include <string>\n#include "common/status.h"\n'})
        code, out = self.run_check(src, "--no-doc")
        self.assertEqual(code, 0, out)
        self.assertIn("0 errors", out)

    def test_include_up_a_layer_fails_naming_file_and_line(self):
        src = self.tree({"common/status.h": '#pragma once\n\n#include "store/database.h"\n',
                         "store/database.h": '#include "common/status.h"\n'})
        code, out = self.run_check(src, "--no-doc")
        self.assertEqual(code, 1, out)
        self.assertIn('src/common/status.h:3: includes "store/database.h"', out)
        self.assertIn("common (layer 0 base) may not include store (layer 1", out)

    def test_subfolder_counts_as_its_top_folder(self):
        src = self.tree({"connectors/targets/target.cc": '#include "api/http.h"\n',
                         "api/http.h": "#pragma once\n"})
        code, out = self.run_check(src, "--no-doc")
        self.assertEqual(code, 1, out)
        self.assertIn("src/connectors/targets/target.cc:1", out)

    def test_cycle_within_one_layer_fails(self):
        src = self.tree({"store/a.h": '#include "guard/b.h"\n',
                         "guard/b.h": '#include "store/a.h"\n'})
        code, out = self.run_check(src, "--no-doc")
        self.assertEqual(code, 1, out)
        self.assertIn("folder cycle", out)
        self.assertIn("src/guard/b.h:1", out)
        self.assertIn("src/store/a.h:1", out)

    def test_one_way_include_within_a_layer_passes(self):
        src = self.tree({"backfill/a.cc": '#include "orchestrator/b.h"\n',
                         "orchestrator/b.h": "#pragma once\n"})
        code, out = self.run_check(src, "--no-doc")
        self.assertEqual(code, 0, out)

    def test_folder_without_a_layer_fails(self):
        src = self.tree({"common/status.h": "#pragma once\n",
                         "newthing/x.cc": '#include "common/status.h"\n'})
        code, out = self.run_check(src, "--no-doc")
        self.assertEqual(code, 1, out)
        self.assertIn("src/newthing/: folder not placed in any layer", out)

    def test_commented_and_angle_includes_do_not_count(self):
        src = self.tree({"common/status.h": '// #include "api/http.h"\n#include <api/http.h>\n',
                         "api/http.h": "#pragma once\n"})
        code, out = self.run_check(src, "--no-doc")
        self.assertEqual(code, 0, out)

    def test_document_must_show_the_same_table(self):
        src = self.tree({"common/status.h": "#pragma once\n"})
        table = subprocess.run([sys.executable, SCRIPT, "--markdown"], capture_output=True,
                               text=True, check=True).stdout
        good = self.tree({"ARCHITECTURE.md": "x\n<!-- layers:begin -->\n" + table +
                          "<!-- layers:end -->\n"})
        code, out = self.run_check(src, "--doc", os.path.join(good, "ARCHITECTURE.md"))
        self.assertEqual(code, 0, out)
        stale = self.tree({"ARCHITECTURE.md": "x\n<!-- layers:begin -->\n" +
                           table.replace("`api`", "`apx`") + "<!-- layers:end -->\n"})
        code, out = self.run_check(src, "--doc", os.path.join(stale, "ARCHITECTURE.md"))
        self.assertEqual(code, 1, out)
        self.assertIn("the layer table differs", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
