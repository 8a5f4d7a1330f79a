#!/usr/bin/env python3
"""Tests of tools/licenses/licenses.py, and the project's license gate (scripts/test, suite
`licenses`): every crate the widget or the binary ships is under an allowed license, and the
committed licenses/ matches Cargo.lock. Prints `licenses: N passed, N failed` last.

    python3 tools/licenses/test_licenses.py
"""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import licenses as L  # noqa: E402


class SpdxExpressions(unittest.TestCase):
    def test_a_permissive_license_or_a_choice_of_them_is_allowed(self):
        for expr in ["MIT", "MIT OR Apache-2.0", "MIT/Apache-2.0", "Unlicense/MIT", "MIT / Apache-2.0",
                     "(MIT OR Apache-2.0) AND Unicode-3.0", "Apache-2.0 WITH LLVM-exception OR Apache-2.0 OR MIT",
                     "MPL-2.0", "CDLA-Permissive-2.0", "Apache-2.0 AND ISC"]:
            self.assertTrue(L.spdx_allowed(expr), expr)

    def test_a_copyleft_license_is_refused_unless_an_allowed_one_can_be_chosen(self):
        self.assertTrue(L.spdx_allowed("MIT OR GPL-3.0-only"))
        for expr in ["GPL-3.0-only", "MIT AND GPL-2.0-or-later", "AGPL-3.0-only OR LGPL-2.1-only",
                     "GPL-2.0-only WITH Classpath-exception-2.0", "MIT WITH Some-unknown-exception"]:
            self.assertFalse(L.spdx_allowed(expr), expr)

    def test_cargos_slash_form_becomes_an_spdx_expression(self):
        self.assertEqual(L.spdx_normalize("MIT/Apache-2.0"), "MIT OR Apache-2.0")
        self.assertEqual(L.spdx_ids("Apache-2.0 WITH LLVM-exception OR Apache-2.0 OR MIT"), ["Apache-2.0", "MIT"])

    def test_an_unreadable_expression_is_a_clear_error(self):
        for expr in ["MIT OR", "(MIT", "MIT Apache-2.0", ""]:
            with self.assertRaises(L.Failure, msg=expr):
                L.spdx_parse(expr)

    def test_the_sbom_names_one_license_by_id_and_an_expression_as_such(self):
        self.assertEqual(L.license_json("MIT"), [{"license": {"id": "MIT"}}])
        self.assertEqual(L.license_json("MIT OR Apache-2.0"), [{"expression": "MIT OR Apache-2.0"}])


class ShippedCrates(unittest.TestCase):
    """The real workspace: cargo tree and cargo metadata, offline (about 5 s)."""

    results = None

    @classmethod
    def setUpClass(cls):
        cls.results = {r.art.key: r for r in L.generate()}

    def test_every_shipped_crate_is_under_an_allowed_license(self):
        bad = L.disallowed(list(self.results.values()))
        self.assertEqual(bad, [], "\n".join(bad) + "\n" + L.ALLOW_HELP)

    def test_the_committed_notices_and_sboms_match_cargo_lock(self):
        old = L.stale(list(self.results.values()))
        self.assertEqual(old, [], "\n".join(old) + "\n" + L.STALE_HELP)

    def test_the_widget_ships_no_native_only_crate_and_no_proc_macro(self):
        names = {c.name for c in self.results["docent-widget"].crates}
        self.assertIn("leptos", names)
        self.assertIn("wasm-bindgen", names)
        # docent-core's `html` feature is the binary's; proc-macros run in the compiler (syn is
        # listed all the same: leptos links leptos_hot_reload, a library that uses it)
        for native in ["html5ever", "scraper", "tokio", "reqwest", "leptos_macro", "wasm-bindgen-macro", "serde_derive"]:
            self.assertNotIn(native, names)

    def test_the_binary_covers_every_release_platform(self):
        crates = {c.name: c for c in self.results["docent"].crates}
        self.assertEqual(crates["windows-sys"].targets, {"x86_64-pc-windows-msvc"})
        self.assertEqual(crates["tokio"].targets, set(L.BINARY_TARGETS))

    def test_docent_own_crates_are_not_listed_as_third_party(self):
        for r in self.results.values():
            self.assertEqual([c.name for c in r.crates if c.name.startswith("docent")], [])
            self.assertEqual(r.own[0].name, r.art.package)

    def test_the_vendored_pulldown_cmark_keeps_its_upstream_license(self):
        for r in self.results.values():
            c = next(c for c in r.crates if c.name == "pulldown-cmark")
            self.assertTrue(c.vendored)
            self.assertEqual(c.license, "MIT")
            self.assertEqual([f.name for f in L.license_files(c)], ["LICENSE"])

    def test_a_crate_without_a_license_file_gets_the_standard_text(self):
        text = self.results["docent"].files[L.OUT / "docent" / "THIRD-PARTY-LICENSES.txt"]
        entry = text.split("\nselectors ", 1)[1].split("\n\n", 1)[0]
        self.assertIn("none in the published crate", entry)
        self.assertIn("[MPL-2.0] The standard text of MPL-2.0", text)

    def test_a_c_library_compiled_into_a_sys_crate_brings_its_license(self):
        c = next(c for c in self.results["docent"].crates if c.name == "onig_sys")
        self.assertIn("oniguruma/COPYING", [f.relative_to(c.dir).as_posix() for f in L.license_files(c)])


def main() -> int:
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors)
    print(f"licenses: {result.testsRun - failed} passed, {failed} failed")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
