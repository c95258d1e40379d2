"""Every ``dpledger`` command line in README.md's shell blocks runs and succeeds (``dpledger demo`` excepted: it is
the main job and takes minutes; its code path is tested in test_predict_cli.py on a small setting)."""

import pathlib
import re
import shlex

import pytest

from dpledger.cli import main

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _commands():
    if not README.is_file():
        return []
    text = README.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```(?:bash|sh|shell|console)\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip().removeprefix("$ ")
            line = line.split(" #", 1)[0].strip()
            if line.startswith("dpledger ") and not line.startswith("dpledger demo"):
                commands.append(line)
    return commands


COMMANDS = _commands()


@pytest.mark.skipif(not COMMANDS, reason="README.md has no dpledger command lines yet")
@pytest.mark.parametrize("line", COMMANDS)
def test_readme_command_succeeds(capsys, line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # commands that write files (dpledger curve) write there
    argv = shlex.split(line)[1:]
    if argv[0] == "predict" and "--quiet" not in argv:
        argv.append("--quiet")
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, f"{line}\n{err}"
    assert out.strip()
