"""Transform and configuration hardening: sandboxed templates, unreadable schema files."""

from __future__ import annotations

from pathlib import Path

from test_fetch import http_source, kb, records, run
from typer.testing import CliRunner

from wikic.cli.app import app
from wikic.core.config import load_sources
from wikic.transform.layer1 import LAYER1
from wikic.transform.run import transform

runner = CliRunner()

ESCAPES = [
    "{{ self.__init__.__globals__.__builtins__.__import__('os').system('touch PWNED') }}",
    "{{ cycler.__init__.__globals__.os.popen('touch PWNED').read() }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
]


def test_a_template_cannot_run_a_command(tree, api, monkeypatch) -> None:
    url = api.add("items", records(3))
    root = kb(tree, {"items": http_source(url, template="t.md.j2")})
    monkeypatch.chdir(root)
    run(root)
    for escape in ESCAPES:
        (root / "schema/templates").mkdir(parents=True, exist_ok=True)
        (root / "schema/templates/t.md.j2").write_text("# {{ title }}\n\n" + escape + "\n", "utf-8")
        [report] = transform(root, load_sources(root))
        assert not (root / "PWNED").exists() and not Path("PWNED").exists()
        assert len(report.errors) == 3 and all("template t.md.j2 failed" in e for e in report.errors)
        assert "unsafe" in report.errors[0]
    (root / "schema/templates/t.md.j2").write_text("# {{ title }}\n\n{{ body | upper }}\n", "utf-8")
    [report] = transform(root, load_sources(root))
    assert report.errors == [] and "BODY OF RECORD 1." in (root / LAYER1 / "items/r001.md").read_text("utf-8")


def test_a_schema_file_that_is_not_utf8_is_a_config_error(tree) -> None:
    root = tree(
        {"schema/sources.yaml": "sources:\n  faq:\n    kind: files\n    path: caf\xe9\n".encode("latin-1")}
    )
    for command in (["fetch"], ["transform"]):
        result = runner.invoke(app, ["--root", str(root), *command])
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
        assert "sources.yaml: not UTF-8 (byte 45" in result.output and "save it as UTF-8" in result.output
    (root / "schema/wiki.yaml").write_bytes(b"librarian: {backend: offline}\n# \xff\n")
    result = runner.invoke(app, ["--root", str(root), "compile"])
    assert result.exit_code == 2 and "wiki.yaml: not UTF-8" in result.output
