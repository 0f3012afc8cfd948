"""bench/render_report.py renders a standalone HTML page to a cropped full-page PNG.

Needs Chromium, which ``make test`` installs where it is missing: a machine without it fails here
with the install command, rather than skipping (a skip would let CI on a new machine not check it).
"""
import shutil
import subprocess
import sys
from pathlib import Path

from PIL import Image

from skill_assets.lib.evaluation.report import html_document

BENCH = Path(__file__).resolve().parent.parent / "bench" / "render_report.py"


def test_render_crops_to_the_page(tmp_path):
    assert any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")), \
        "no Chromium on this machine: run `make test` (installs it) or `apt-get install -y chromium`"
    rows = "\n".join(f"| s{i} | {i}.00 |" for i in range(60))
    html = tmp_path / "r.html"
    html.write_text(html_document("t", [("Table", "| system | hit@1 |\n|---|---|\n" + rows)], {}))
    out = subprocess.run([sys.executable, str(BENCH), str(html), "--out", str(tmp_path / "r.png"), "--width", "800"],
                         capture_output=True, text=True, check=True, timeout=1800).stdout.strip().splitlines()[-1]
    image = Image.open(tmp_path / "r.png")
    assert f'"width": 800, "height": {image.height}' in out
    assert 1000 < image.height < 4000  # 60 table rows: taller than a screen, far shorter than the 16000 px window
