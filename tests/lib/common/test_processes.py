"""``/proc/<pid>/stat`` read once for every caller (process tokens, group members, the tests' leftover check)."""
import os
import shutil
import subprocess

from skill_assets.lib.common.processes import live_stats, read_stat


def test_a_command_name_with_spaces_and_a_parenthesis_does_not_shift_the_fields(tmp_path):
    odd = tmp_path / "odd) name"
    odd.symlink_to(shutil.which("sleep"))
    child = subprocess.Popen([str(odd), "600"])
    try:
        name, fields = read_stat(child.pid)
        assert name == "odd) name"
        assert fields[0] in "RSD" and int(fields[1]) == os.getpid()  # state, then the parent's pid
        listed_name, listed = live_stats()[child.pid]
        assert (listed_name, listed[1]) == (name, fields[1])
    finally:
        child.kill()
        child.wait()
    assert read_stat(child.pid) is None and child.pid not in live_stats()
